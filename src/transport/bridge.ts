import * as zmq from 'zeromq';
import { serverOptions, type ServerSecurity } from './curve';
import { MAX_MESSAGE_BYTES } from './frames';

/** Endpoints of a bridge: producers connect to `in`, consumers to `out`. */
export interface BridgeEndpoints {
  in: string;
  out: string;
}

/** CurveZMQ for either side (a side on inproc needs none); see ServerSecurity. */
export interface BridgeSecurity {
  in?: ServerSecurity | undefined;
  out?: ServerSecurity | undefined;
}

type Front = zmq.Pull | zmq.XSubscriber;
type Back = zmq.Push | zmq.XPublisher;

/**
 * A forwarder between two bound sockets, so that any number of producers and consumers attach
 * to stable addresses. Queues use PULL->PUSH (each message to one consumer), pubsubs XSUB->XPUB
 * (each message to every subscriber, subscriptions flowing back). The forwarding runs on the
 * event loop: libzmq's proxy would hold one of libuv's four pool threads per bridge, and a few
 * bridges would then starve file I/O (fsync) of threads.
 */
export class Bridge {
  private constructor(
    private readonly front: Front,
    private readonly back: Back,
    readonly endpoints: BridgeEndpoints,
    private readonly loops: Promise<void>[],
  ) {}

  /** A queue bridge. Addresses default to ephemeral loopback tcp ports. */
  static async queue(
    inAddr = 'tcp://127.0.0.1:0',
    outAddr = 'tcp://127.0.0.1:0',
    security: BridgeSecurity = {},
  ): Promise<Bridge> {
    const front = new zmq.Pull({
      linger: 0,
      receiveHighWaterMark: 10_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...serverOptions(security.in),
    });
    const back = new zmq.Push({
      linger: 0,
      sendHighWaterMark: 10_000,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...serverOptions(security.out),
    });
    await front.bind(inAddr);
    await back.bind(outAddr);
    return new Bridge(front, back, Bridge.endpointsOf(front, back, inAddr, outAddr), [
      pump(front, back),
    ]);
  }

  /**
   * A pubsub bridge: publishers connect to `in`, subscribers to `out`, or to `alsoOut` (an
   * inproc address for subscribers of this process when `out` is a CURVE server).
   */
  static async pubsub(
    inAddr = 'tcp://127.0.0.1:0',
    outAddr = 'tcp://127.0.0.1:0',
    security: BridgeSecurity = {},
    alsoOut?: string,
  ): Promise<Bridge> {
    const front = new zmq.XSubscriber({
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...serverOptions(security.in),
    });
    const back = new zmq.XPublisher({
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      ...serverOptions(security.out),
    });
    await front.bind(inAddr);
    await back.bind(outAddr);
    const out = back.lastEndpoint ?? outAddr;
    if (alsoOut !== undefined) await back.bind(alsoOut);
    return new Bridge(front, back, { in: front.lastEndpoint ?? inAddr, out }, [
      pump(front, back),
      pump(back, front),
    ]);
  }

  private static endpointsOf(
    front: Front,
    back: Back,
    inAddr: string,
    outAddr: string,
  ): BridgeEndpoints {
    return { in: front.lastEndpoint ?? inAddr, out: back.lastEndpoint ?? outAddr };
  }

  async close(): Promise<void> {
    this.front.close();
    this.back.close();
    await Promise.allSettled(this.loops);
  }
}

/** Moves every message from `from` to `to` until either socket closes. */
async function pump(from: zmq.Readable & zmq.Socket, to: zmq.Writable & zmq.Socket): Promise<void> {
  try {
    for await (const msg of from) {
      if (to.closed) break;
      await to.send(msg);
    }
  } catch (e) {
    if (!from.closed && !to.closed) throw e;
  }
}
