#!/usr/bin/env node
/** `npm run sim`: runs the simulated cluster until SIGINT/SIGTERM. */
import { resolve } from 'node:path';
import { FAST_BEHAVIOUR, podServingHint, startSimulator } from '@opi/kube-sim';
import { USAGE, parseSimArgs } from './args.js';

async function main(): Promise<void> {
  let args;
  try {
    args = parseSimArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n\n${USAGE}`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  const sim = await startSimulator({
    port: args.port,
    host: args.host,
    ...(args.advertiseHost ? { advertiseHost: args.advertiseHost } : {}),
    namespaces: args.namespaces,
    ...(args.token ? { token: args.token } : {}),
    ...(args.seed !== undefined ? { seed: args.seed } : {}),
    ...(args.kubernetesVersion !== undefined ? { kubernetesVersion: args.kubernetesVersion } : {}),
    ...(args.podRange !== undefined ? { podRange: args.podRange } : {}),
    servePods: args.servePods,
    behaviour: {
      ...(args.fast ? FAST_BEHAVIOUR : {}),
      ...(args.featureGates.MaxUnavailableStatefulSet !== undefined
        ? { maxUnavailableStatefulSet: args.featureGates.MaxUnavailableStatefulSet }
        : {}),
    },
  });
  process.stdout.write(`simulated cluster listening on ${sim.url}\n`);
  const hint = podServingHint(sim);
  if (hint) process.stdout.write(`${hint}\n`);
  if (args.kubeconfig) {
    const file = resolve(args.kubeconfig);
    await sim.writeKubeconfig(file);
    process.stdout.write(
      `kubeconfig written to ${file}\ntry: kubectl --kubeconfig ${file} get deployments -A\n`,
    );
  } else {
    process.stdout.write(`token: ${sim.token} (pass --kubeconfig <file> to get a kubeconfig)\n`);
  }
  const stop = (): void => {
    process.stdout.write('stopping\n');
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
