/** `npm run start:api`: the API alone, scaled on its own in production. */
import { createLogger } from '@opi/logging';
import { onShutdown, settingsOrExit } from '@opi/runtime';
import { startApi } from './start.js';

const settings = settingsOrExit();
const logger = createLogger({ level: settings.logLevel, name: 'opi-api' });
const api = await startApi(settings, logger);
onShutdown(logger, settings.shutdownTimeoutMs, [() => api.close()]);
