/**
 * The images of the kubelet's nodes and a container's pull before it starts: "already present on
 * machine" when the node holds the image and the policy allows reuse, else Pulling and Pulled after the
 * pull delay; an image named with PULL_ERROR_IMAGE_PREFIX fails with ErrImagePull, then ImagePullBackOff,
 * and is tried again after a back-off that doubles up to its cap.
 */
import type { Context } from './context.js';
import type { PodRuns } from './pod-runs.js';
import { type ContainerRun, type PodRun, goDuration, imageIdOf } from './runtime.js';

export class ImagePulls {
  /** `${node}|${image}` of images a node holds, for "already present on machine". */
  private readonly images = new Set<string>();

  constructor(
    private readonly ctx: Context,
    private readonly runs: PodRuns,
    /** Creates and starts the container once its image is there. */
    private readonly start: (run: PodRun, c: ContainerRun) => void,
  ) {}

  /** Pull (unless the node has the image and the policy allows reuse), then create and start. */
  launch(run: PodRun, c: ContainerRun): void {
    const b = this.ctx.behaviour;
    const imageKey = `${run.node}|${c.image}`;
    if (!c.sim.pullError && c.spec.imagePullPolicy !== 'Always' && this.images.has(imageKey)) {
      this.runs.event(
        run,
        c,
        'Normal',
        'Pulled',
        `Container image "${c.spec.image}" already present on machine`,
      );
      this.runs.after(run, this.ctx.jittered(b.startDelayMs), 'start', () => {
        this.start(run, c);
      });
      return;
    }
    this.runs.event(run, c, 'Normal', 'Pulling', `Pulling image "${c.spec.image}"`);
    const pullMs = this.ctx.jittered(b.pullDelayMs);
    this.runs.after(run, pullMs, 'pull', () => {
      if (c.sim.pullError) {
        this.pullFailed(run, c);
        return;
      }
      this.images.add(imageKey);
      c.imageID = imageIdOf(c.image);
      const took = goDuration(pullMs);
      const size = 10_000_000 + (parseInt(c.imageID.slice(-6), 16) % 90_000_000);
      this.runs.event(
        run,
        c,
        'Normal',
        'Pulled',
        `Successfully pulled image "${c.spec.image}" in ${took} (${took} including waiting). Image size: ${size} bytes.`,
      );
      this.runs.after(run, this.ctx.jittered(b.startDelayMs), 'start', () => {
        this.start(run, c);
      });
    });
  }

  private pullFailed(run: PodRun, c: ContainerRun): void {
    const b = this.ctx.behaviour;
    const ref = c.image;
    const cause = `rpc error: code = NotFound desc = failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found`;
    this.runs.event(run, c, 'Warning', 'Failed', `Failed to pull image "${c.spec.image}": ${cause}`);
    this.runs.event(run, c, 'Warning', 'Failed', 'Error: ErrImagePull');
    c.state = { waiting: { reason: 'ErrImagePull', message: cause } };
    this.runs.sync(run);
    this.runs.after(run, this.ctx.jittered(b.pullDelayMs), 'pull back-off', () => {
      c.state = {
        waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${c.spec.image}"` },
      };
      this.runs.event(run, c, 'Normal', 'BackOff', `Back-off pulling image "${c.spec.image}"`);
      this.runs.event(run, c, 'Warning', 'Failed', 'Error: ImagePullBackOff');
      this.runs.sync(run);
      const wait = c.pullBackoffMs;
      this.runs.after(run, wait, 'pull retry', () => {
        c.pullBackoffMs = Math.min(wait * 2, this.ctx.behaviour.backoffMaxMs);
        this.launch(run, c);
      });
    });
  }
}
