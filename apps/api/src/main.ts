/** `npm run start:api`: the API alone, scaled on its own in production. */
import { createLogger } from '@opi/logging';
import { onShutdown, settingsOrExit } from '@opi/runtime';
import { assertSafeToListenOrExit } from './security.js';
import { startApi } from './start.js';

const settings = settingsOrExit();
const logger = createLogger({ level: settings.logLevel, name: 'opi-api' });
// Before Redis, workers or a cluster are touched: an API open to the network does not start.
assertSafeToListenOrExit(settings, logger);
const api = await startApi(settings, logger);
onShutdown(logger, settings.shutdownTimeoutMs, [() => api.close()]);
