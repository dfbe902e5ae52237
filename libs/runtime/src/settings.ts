import { type Settings, SettingsError, parseSettings } from '@opi/config';

/** Settings from the environment, or exit 2 with the message naming the bad variable. */
export function settingsOrExit(env: NodeJS.ProcessEnv = process.env): Settings {
  try {
    return parseSettings(env);
  } catch (e) {
    if (e instanceof SettingsError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}
