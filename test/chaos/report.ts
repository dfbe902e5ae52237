/**
 * A seeded run's report once it has converged or timed out: each wrong spec, repeated and missing completion
 * with the log lines that name it, then the RESULT counts of the apps, the tasks and the chaos.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppsV1Api } from '@kubernetes/client-node';
import type { Simulator } from '@opi/kube-sim';
import type { FakeCc } from '../support/fake-cc.js';
import type { ChaosStats } from './actions.js';
import type { CcLoop } from './cc-loop.js';
import { type Counts, clusterDeployments, deliveries } from './counting.js';
import { request } from './http.js';
import type { ServiceProcess } from './processes.js';

/** The log lines of every process in `dir` that name `needle`, cut short. */
export async function linesNaming(dir: string, needle: string): Promise<string[]> {
  const out: string[] = [];
  for (const f of (await readdir(dir)).filter((n) => n.endsWith('.log')).sort()) {
    for (const line of (await readFile(join(dir, f), 'utf8')).split('\n')) {
      if (line.includes(needle)) out.push(`${f}: ${line.slice(0, 300)}`);
    }
  }
  return out.slice(0, 12);
}

/** What a seeded run holds once it is over. */
export interface SeedRun {
  seed: number;
  started: number;
  say: (line: string) => void;
  base: string;
  logDir: string;
  appsApi: AppsV1Api;
  cc: FakeCc;
  sim: Simulator;
  api: ServiceProcess;
  workers: readonly ServiceProcess[];
  loop: CcLoop;
  stats: ChaosStats;
  killedAt: readonly number[];
}

/**
 * Says what is wrong and the RESULT; answers the repeated completions (for the failure's diff) and whether
 * the API died.
 */
export async function report(run: SeedRun, c: Counts): Promise<{ repeats: string[]; apiDied: boolean }> {
  const { seed, started, say, base, logDir, appsApi, cc, sim, api, workers, stats, killedAt } = run;
  const { model, tasks, vanished } = run.loop;
  const deployed = await clusterDeployments(appsApi);
  for (const a of model) {
    const d = deployed.get(a.pg)?.[0];
    if (a.wanted !== 'running' || !d) continue;
    if (d.replicas === a.instances && d.image === a.image && d.annotation === a.annotation) continue;
    const rec = await request(base, 'GET', `/apps/${a.guid}/${a.version}`);
    say(
      `wrong spec ${a.pg}: CC wants ${a.instances} × ${a.image} @ ${a.annotation}; the Deployment has` +
        ` ${d.replicas} × ${d.image} @ ${d.annotation}; GET /apps/:guid/:version ${rec.status} ${rec.text}`,
    );
  }
  // Each repeated completion with its timeline and the log lines that name it, in the failure's diff
  // (CI shows only the end of the output).
  const since = (ms: number | undefined) => `+${(((ms ?? started) - started) / 1000).toFixed(1)}s`;
  const repeats: string[] = [];
  const delivered = deliveries(cc);
  for (const t of tasks.filter((x) => (delivered.get(x.guid) ?? 0) > 1)) {
    const answers = cc.calls
      .filter((call) => call.path === `/internal/v4/tasks/${t.guid}/completed`)
      .map((call) => `${String(call.status)}@${since(call.answeredAt)}`);
    const logged = await linesNaming(logDir, t.guid);
    repeats.push(
      `${t.guid}: CC re-submitted ${t.posts - 1}×; answers ${answers.join(' ')}; SIGKILLs at` +
        ` ${killedAt.map(since).join(' ')}; ${logged.join(' | ')}`,
    );
  }
  for (const r of repeats) say(`repeated completion ${r}`);
  // Each task CC never heard of, with the log lines that name it.
  for (const t of tasks.filter((x) => x.created && !delivered.has(x.guid))) {
    say(
      `missing completion ${t.guid}: posted ${t.posts}×; ${(await linesNaming(logDir, t.guid)).join(' | ')}`,
    );
  }
  const secs = ((Date.now() - started) / 1000).toFixed(0);
  const apiDied = api.unexpectedExit !== undefined;
  const selfExits = workers.filter((w) => w.unexpectedExit !== undefined && !w.killedByUs).length;
  say(
    [
      `RESULT seed=${seed} (${secs}s)`,
      `  apps:  desired ${c.desired}, present-correct ${c.presentCorrect}, lost ${c.lost}, wrong spec ${c.wrongSpec},` +
        ` stopped ${c.stopped}, leftover ${c.leftover}, duplicate Deployments ${c.duplicateDeployments},` +
        ` unknown Deployments ${c.unknownDeployments}`,
      `  tasks: ${c.tasks}, callbacks once ${c.callbacksOnce}, missing ${c.missing}, duplicated ${c.duplicated},` +
        ` repeated after a worker's SIGKILL ${c.repeatedAfterKill},` +
        ` callbacks for unknown tasks ${c.unknownCallbacks}, vanished from GET /tasks and re-submitted ${vanished.size}`,
      `  chaos: worker SIGKILLs ${stats.workerKills}, Redis restarts ${stats.redisRestarts}, Redis flushes` +
        ` ${stats.redisFlushes}, writes the AOF lost ${stats.aofLost}, CC down ${Math.round(stats.ccDownMs / 1000)}s, cluster errors` +
        ` ${sim.faults.injected.errors}, drops ${sim.faults.injected.drops}, conflicts` +
        ` ${sim.faults.injected.conflicts}, watches cut ${sim.faults.injected.watchesCut}, CC passes ${stats.passes},` +
        ` API died ${apiDied}, workers exited by themselves ${selfExits}`,
    ].join('\n'),
  );
  return { repeats, apiDied };
}
