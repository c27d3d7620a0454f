import { errorMeta } from '../../../errors';
import type { Clock } from '../../../lib/clock';
import type { Logger } from '../../../lib/logger';
import type { ExitedEvent, FailedEvent, ServiceJob, SpawnSpec, StopHow } from '../effects';
import { LivenessWatch } from './liveness';
import { freePort, httpOk, ReadinessProbe, tcpAccepts } from './service-probe';

export interface ServiceRunnerOptions {
  clock: Clock;
  logger: Logger;
  /** Starts the service's process (the SpawnerPool; its exit comes back as any task's). */
  spawn(spec: SpawnSpec): void;
  ready(events: { uid: string; endpoint: string }[]): void;
  /** A ready service missed `misses` liveness probes in a row: the core kills it. */
  unhealthy(events: { uid: string; misses: number }[]): void;
  /** No port could be had (E_SERVICE_PORT), or a service stopped before it was spawned. */
  failed(events: FailedEvent[]): void;
  exited(events: ExitedEvent[]): void;
}

interface Service {
  job: ServiceJob;
  /** Handed to the spawner: its stop and exit are the process runner's from then on. */
  spawned: boolean;
  stoppedBeforeSpawn?: StopHow;
  probe?: ReadinessProbe;
  liveness?: LivenessWatch;
}

/**
 * Starts services: picks the port of one that asks for 'auto' and passes it as PF_PORT, hands
 * its process to the spawner, then probes it (ReadinessProbe) until ready and reports its
 * endpoint (`host:port`, or `host` without a port).
 */
export class ServiceRunner {
  private readonly services = new Map<string, Service>();

  constructor(private readonly opts: ServiceRunnerOptions) {}

  start(job: ServiceJob): void {
    const s: Service = { job, spawned: false };
    this.services.set(job.process.spec.uid, s);
    if (job.port !== 'auto') return this.launch(s, job.port);
    freePort().then(
      (port) => this.launch(s, port),
      (e: unknown) => {
        const uid = job.process.spec.uid;
        this.services.delete(uid);
        const message = `no free port for the service: ${errorMeta(e).error.message}`;
        this.opts.failed([{ uid, code: 'E_SERVICE_PORT', message }]);
      },
    );
  }

  /**
   * Whether the runner holds the stop: a service not yet spawned (picking its port) ends here,
   * as if stopped; a spawned one is the spawner's to signal (returns false).
   */
  stop(uid: string, how: StopHow): boolean {
    const s = this.services.get(uid);
    if (s === undefined || s.spawned) return false;
    s.stoppedBeforeSpawn = how;
    return true;
  }

  /** The service's process ended (or never started): its checks stop. */
  ended(uid: string): void {
    const s = this.services.get(uid);
    if (s === undefined || !s.spawned) return;
    this.services.delete(uid);
    s.probe?.stop();
    s.liveness?.stop();
  }

  close(): void {
    for (const s of this.services.values()) {
      s.probe?.stop();
      s.liveness?.stop();
    }
    this.services.clear();
  }

  private launch(s: Service, port: number | undefined): void {
    const { job } = s;
    const spec = job.process.spec;
    if (this.services.get(spec.uid) !== s) return; // closed meanwhile
    if (s.stoppedBeforeSpawn !== undefined) {
      this.services.delete(spec.uid);
      const signal = s.stoppedBeforeSpawn === 'kill' ? 'SIGKILL' : 'SIGTERM';
      return this.opts.exited([{ uid: spec.uid, exitCode: null, signal }]);
    }
    if (port !== undefined) spec.env.PF_PORT = String(port);
    const endpoint = port === undefined ? job.host : `${job.host}:${port}`;
    s.spawned = true;
    this.opts.spawn(spec);
    const target = {
      host: job.host,
      // services keep output 'files': their ready pattern is looked for there
      outputs: spec.stream === undefined ? [spec.stdoutPath, spec.stderrPath] : [],
      ...(port === undefined ? {} : { port }),
    };
    s.probe = new ReadinessProbe(job.ready, target, this.opts.clock, () => {
      this.opts.logger.info('service ready', { uid: spec.uid, endpoint });
      this.opts.ready([{ uid: spec.uid, endpoint }]);
      if (port !== undefined && this.services.get(spec.uid) === s) this.watch(s, port);
    });
  }

  /** Probes a ready service until it ends; one that stops answering is reported unhealthy. */
  private watch(s: Service, port: number): void {
    const l = s.job.liveness;
    if (l === undefined) return;
    const { host } = s.job;
    const uid = s.job.process.spec.uid;
    const probe = async (): Promise<boolean> => {
      const [tcp, http] = await Promise.all([
        l.tcp === true ? tcpAccepts(host, port, l.timeoutMs) : true,
        l.http !== undefined ? httpOk(host, port, l.http, l.timeoutMs) : true,
      ]);
      return tcp && http;
    };
    s.liveness = new LivenessWatch(l, this.opts.clock, probe, (misses) => {
      this.opts.logger.warn('service unhealthy', { uid, misses });
      this.opts.unhealthy([{ uid, misses }]);
    });
  }
}
