/**
 * How a container's end is put to CC in Diego's words, for a task's `failure_reason` and a crash's
 * `exit_description`: Diego's executor says `<log source>: Exited with status <n>`, adding ` (out of
 * memory)` after an OOM kill (executor depot/steps/run_step.go:216, 229-231), and its log sources are CC's
 * `APP/PROC/<TYPE>` and `APP/TASK/<name>` (CC lib/cloud_controller/diego/main_lrp_action_builder.rb:63,
 * buildpack/task_action_builder.rb:39). What Kubernetes knows beyond that (the container's termination
 * message, an eviction) follows after a colon; the whole stays within Diego's bound (DIEGO_REASON_MAX).
 */
import { DIEGO_REASON_MAX, boundText } from '@opi/domain';
import type { ContainerStateTerminated } from '@opi/kube-objects';

/** One line of text: a termination message or a Kubernetes message, its whitespace runs made one space. */
export function oneLine(text: string | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').trim();
}

/** `<source>: <words>`, the source left out when unknown. */
function sourced(source: string | undefined, words: string): string {
  return source ? `${source}: ${words}` : words;
}

/** `Exited with status 137 (out of memory)`: Diego's words for an exit, without the source. */
export function exitWords(terminated: Pick<ContainerStateTerminated, 'exitCode' | 'reason'>): string {
  const oom = terminated.reason === 'OOMKilled' ? ' (out of memory)' : '';
  return `Exited with status ${terminated.exitCode}${oom}`;
}

/** An exit as Diego says it, with the container's termination message after it when it wrote one. */
export function describeExit(source: string | undefined, terminated: ContainerStateTerminated): string {
  const message = oneLine(terminated.message);
  return boundText(
    sourced(source, message ? `${exitWords(terminated)}: ${message}` : exitWords(terminated)),
    DIEGO_REASON_MAX,
  );
}

/**
 * What is not an exit (a pod evicted, a container that never started, a Job past its deadline):
 * `<source>: <reason>: <message>`, e.g. `APP/TASK/migrate: evicted: The node was low on resource: memory.`
 */
export function describeCondition(source: string | undefined, reason: string, message?: string): string {
  const words = reason === 'Evicted' ? 'evicted' : reason;
  const detail = oneLine(message);
  return boundText(sourced(source, detail ? `${words}: ${detail}` : words), DIEGO_REASON_MAX);
}
