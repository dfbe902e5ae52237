/**
 * @opi/contract/testing: the bodies CC sends (desire, update, task, staging) and the guids they carry,
 * for the tests and the bench alike (the bench builds to its own dist and can import no test file).
 */
export { type Lrp, newLrp, uuid } from './testing/guids.js';
export {
  GUID,
  PROCESS_GUID,
  VERSION,
  clientDesireBody,
  desireBody,
  fullDesireBody,
  minimalDesireBody,
  withField,
} from './testing/desire-bodies.js';
export { updateBody } from './testing/update-body.js';
export { taskBody } from './testing/task-body.js';
export { buildpackLifecycle, stagingBody } from './testing/staging-body.js';
