/**
 * report-crash: one report per crash to CC's /internal/v4/apps/<process_guid>/crashed, then the pod's
 * marker is raised to that crash count. The marker only grows (a resourceVersion precondition, retried
 * on conflict), so reports finishing out of order never make the sync report a crash twice.
 */
import { crashReportBody, crashReportUrl } from '@opi/callbacks';
import { ConflictError } from '@opi/kube';
import type { JobPayload } from '@opi/queue';
import {
  CRASHES_REPORTED_ANNOTATION,
  mayBeProbeKilled,
  probeKillDescription,
  reportedCrashesOf,
} from '@opi/translation';
import type { Pod } from '@opi/kube-objects';
import type { HandlerDeps } from '../deps.js';
import type { Delivered, Refused, Skipped } from './outcome.js';
import { postToCc } from './report.js';

export async function reportCrash(
  deps: HandlerDeps,
  p: JobPayload<'reportCrash'>,
): Promise<Skipped | Delivered | Refused> {
  if (!deps.ccInternalUrl) return { kind: 'skipped', why: 'crash reports are off (no CC_INTERNAL_URL)' };
  const pod = await deps.kube.pods.get(p.podNamespace, p.instance);
  if (pod && pod.metadata.uid === p.podUid && reportedCrashesOf(pod) >= p.crashCount)
    return { kind: 'skipped', why: 'already reported' };
  const { podNamespace: _ns, podUid: _uid, ...report } = p;
  const probeWords = pod?.metadata.uid === p.podUid ? await probeKillWords(deps, pod) : undefined;
  const result = await postToCc(
    deps,
    crashReportUrl(deps.ccInternalUrl, p.processGuid),
    crashReportBody(probeWords ? { ...report, exitDescription: probeWords } : report),
    {
      processGuid: p.processGuid,
      instance: p.instance,
      crashCount: p.crashCount,
    },
  );
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.kube.pods.get(p.podNamespace, p.instance);
    if (current?.metadata.uid !== p.podUid || reportedCrashesOf(current) >= p.crashCount) break;
    try {
      await deps.kube.pods.annotate(
        p.podNamespace,
        p.instance,
        { [CRASHES_REPORTED_ANNOTATION]: String(p.crashCount) },
        current.metadata.resourceVersion,
      );
      break;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
  return result;
}

/**
 * Diego's words for a kill by a failed startup or liveness probe, which only the pod's Events tell
 * (decision 10). Read only for a signal exit; a failed read leaves the exit's words, never the report.
 */
async function probeKillWords(deps: HandlerDeps, pod: Pod): Promise<string | undefined> {
  if (!mayBeProbeKilled(pod) || !pod.metadata.uid) return undefined;
  try {
    const { items } = await deps.kube.events.list(
      pod.metadata.namespace,
      `involvedObject.kind=Pod,involvedObject.uid=${pod.metadata.uid}`,
    );
    return probeKillDescription(pod, items);
  } catch (err) {
    deps.logger.debug(
      { err, pod: pod.metadata.name },
      'pod events unreadable: the crash is worded as an exit',
    );
    return undefined;
  }
}
