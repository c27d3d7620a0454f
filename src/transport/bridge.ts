import * as zmq from 'zeromq';

/** Endpoints of a bridge: producers connect to `in`, consumers to `out`. */
export interface BridgeEndpoints {
  in: string;
  out: string;
}

/**
 * A forwarder between two bound sockets, so that any number of producers and consumers attach
 * to stable addresses. Queues use PULL->PUSH (each message to one consumer), pubsubs XSUB->XPUB
 * (each message to every subscriber). Runs libzmq's proxy in a worker thread.
 */
export class Bridge {
  private constructor(
    private readonly proxy: zmq.Proxy<zmq.Pull | zmq.XSubscriber, zmq.Push | zmq.XPublisher>,
    readonly endpoints: BridgeEndpoints,
    private readonly running: Promise<void>,
  ) {}

  /** A queue bridge. Addresses default to ephemeral loopback tcp ports. */
  static async queue(inAddr = 'tcp://127.0.0.1:0', outAddr = 'tcp://127.0.0.1:0'): Promise<Bridge> {
    return Bridge.start(new zmq.Pull({ linger: 0 }), new zmq.Push({ linger: 0 }), inAddr, outAddr);
  }

  /** A pubsub bridge: publishers connect to `in`, subscribers to `out`. */
  static async pubsub(inAddr = 'tcp://127.0.0.1:0', outAddr = 'tcp://127.0.0.1:0'): Promise<Bridge> {
    return Bridge.start(
      new zmq.XSubscriber({ linger: 0 }),
      new zmq.XPublisher({ linger: 0 }),
      inAddr,
      outAddr,
    );
  }

  private static async start(
    front: zmq.Pull | zmq.XSubscriber,
    back: zmq.Push | zmq.XPublisher,
    inAddr: string,
    outAddr: string,
  ): Promise<Bridge> {
    await front.bind(inAddr);
    await back.bind(outAddr);
    const proxy = new zmq.Proxy<zmq.Pull | zmq.XSubscriber, zmq.Push | zmq.XPublisher>(front, back);
    const endpoints = { in: front.lastEndpoint ?? inAddr, out: back.lastEndpoint ?? outAddr };
    const running = proxy.run();
    return new Bridge(proxy, endpoints, running);
  }

  async close(): Promise<void> {
    this.proxy.terminate();
    await this.running.catch(() => undefined);
    this.proxy.frontEnd.close();
    this.proxy.backEnd.close();
  }
}
