export {
  type RouterEndpoint,
  type RouterRig,
  freePort,
  isLoopback,
  routerRigAvailable,
  startRouterRig,
} from './router-rig.js';
