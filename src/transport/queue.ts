import * as zmq from 'zeromq';
import { SerialSender, decodedMessages, type Decoded } from './frames';

/** The producing end of a queue: connects to a bridge's `in`. */
export class QueueSender {
  private readonly out: SerialSender;

  constructor(readonly address: string) {
    const sock = new zmq.Push({ linger: 2_000, sendHighWaterMark: 10_000 });
    sock.connect(address);
    this.out = new SerialSender(sock);
  }

  send(value: unknown): Promise<void> {
    return this.out.send(value);
  }

  close(): Promise<void> {
    return this.out.close();
  }
}

/** The consuming end of a queue: connects to a bridge's `out`. */
export class QueueReceiver {
  private readonly sock = new zmq.Pull({ linger: 0, receiveHighWaterMark: 10_000 });

  constructor(readonly address: string) {
    this.sock.connect(address);
  }

  messages(): AsyncGenerator<Decoded> {
    return decodedMessages(this.sock);
  }

  close(): void {
    if (!this.sock.closed) this.sock.close();
  }
}
