/** @opi/kube/testing: fault injection and call hooks around any KubernetesPort, for tests only. */
export {
  aroundCalls,
  unavailableError,
  withFaults,
  type Around,
  type CallName,
  type FaultControl,
  type FaultRule,
  type FaultTiming,
  type FaultyKubernetes,
  type InjectedFault,
} from './testing/with-faults.js';
