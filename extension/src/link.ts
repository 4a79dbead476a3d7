/**
 * The one comm between this front end and the kernel of the active notebook or console.
 *
 * The kernel's msdebug registers the comm target `msdebug` when it loads, and lists a sign
 * under it that `comm_info` shows; it opens no comm itself (a JupyterLab without this
 * extension would log an error for it). This side asks for `comm_info` when it starts
 * following a kernel, after a restart, and after each cell while msdebug is not loaded
 * there, and opens the comm once the sign is listed. Whatever goes wrong here is logged
 * with the `msdebug:` prefix and leaves JupyterLab alone.
 */

import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { Action, COMM_TARGET, PROTOCOL, commandMessage, parseMessage } from './protocol';
import { INITIAL, ItemEvent, ItemState, next } from './state';

/** Log a problem without throwing: every message says where it comes from. */
export function warn(message: string, error?: unknown): void {
  console.warn(`msdebug: ${message}`, ...(error === undefined ? [] : [error]));
}

/**
 * A kernel message's future rejects when the kernel restarts or goes away before it is done:
 * expected here, so it is logged with the prefix instead of reaching the console unhandled.
 */
function quiet(future: Kernel.IShellFuture | undefined, what: string): void {
  future?.done.catch(error => warn(`${what} did not complete (the kernel restarted or went away)`, error));
}

/** A pending command, answered by the kernel's `reply`. */
interface IPending {
  resolve: (error: string) => void;
}

export class KernelLink {
  /** What the item shows; changes are announced by {@link changed}. */
  get state(): ItemState {
    return this._state;
  }

  get changed(): ISignal<this, ItemState> {
    return this._changed;
  }

  /** Follow the kernel of `session` (null: nothing to follow). */
  follow(session: ISessionContext | null): void {
    if (session === this._session) {
      return;
    }
    if (this._session) {
      this._session.kernelChanged.disconnect(this._onKernelChanged, this);
      this._session.statusChanged.disconnect(this._onStatus, this);
    }
    this._session = session;
    if (session) {
      session.kernelChanged.connect(this._onKernelChanged, this);
      session.statusChanged.connect(this._onStatus, this);
    }
    this._attach(session?.session?.kernel ?? null);
  }

  /** Ask the kernel for `action`; resolves to its one-line error, or "" when done. */
  request(action: Action): Promise<string> {
    const comm = this._comm;
    if (!comm || comm.isDisposed) {
      return Promise.resolve('msdebug is not connected to this kernel');
    }
    const id = ++this._lastId;
    return new Promise<string>(resolve => {
      this._pending.set(id, { resolve });
      try {
        quiet(comm.send(commandMessage(id, action) as any), 'a command');
      } catch (error) {
        this._pending.delete(id);
        warn('could not send a command to the kernel', error);
        resolve('could not reach the kernel');
      }
    });
  }

  dispose(): void {
    this.follow(null);
    Signal.clearData(this);
  }

  private _dispatch(event: ItemEvent): void {
    const before = this._state;
    this._state = next(before, event);
    if (this._state.phase === 'unusable' && before.phase !== 'unusable') {
      warn(this._state.problem);
    }
    if (this._state !== before) {
      this._changed.emit(this._state);
    }
  }

  private _onKernelChanged(): void {
    this._attach(this._session?.session?.kernel ?? null);
  }

  private _onStatus(_session: ISessionContext, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      // The kernel's msdebug and its comm are gone: clear now, reconnect when it is back.
      this._dropComm();
      this._reconnect = status !== 'dead';
      this._dispatch({ type: 'kernel', present: status !== 'dead' });
    } else if (status === 'idle' && this._reconnect) {
      this._reconnect = false;
      this._probe();
    }
  }

  /** After each cell, while msdebug is not loaded in the kernel: was it loaded by this cell? */
  private _onIOPub(kernel: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    const parent = msg.parent_header as Partial<KernelMessage.IHeader>;
    if (
      kernel === this._kernel &&
      this._state.phase === 'waiting' &&
      KernelMessage.isStatusMsg(msg) &&
      msg.content.execution_state === 'idle' &&
      parent.msg_type === 'execute_request'
    ) {
      this._probe();
    }
  }

  private _attach(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this._kernel) {
      return;
    }
    this._dropComm();
    this._kernel?.iopubMessage.disconnect(this._onIOPub, this);
    this._kernel = kernel;
    this._reconnect = false;
    this._dispatch({ type: 'kernel', present: kernel !== null });
    if (!kernel) {
      return;
    }
    kernel.iopubMessage.connect(this._onIOPub, this);
    this._probe();
  }

  /** Open the comm if the kernel's msdebug is loaded: `comm_info` lists its sign. */
  private _probe(): void {
    const kernel = this._kernel;
    if (!kernel || kernel.isDisposed || this._comm) {
      return;
    }
    kernel.requestCommInfo({ target_name: COMM_TARGET }).then(
      reply => {
        const content = reply.content;
        if (kernel === this._kernel && !this._comm && content.status === 'ok' && Object.keys(content.comms).length) {
          this._open();
        }
      },
      error => warn('could not ask the kernel whether msdebug is loaded', error)
    );
  }

  /** Open a comm to the kernel's msdebug; it answers with the state. */
  private _open(): void {
    const kernel = this._kernel;
    if (!kernel || kernel.isDisposed) {
      return;
    }
    try {
      const comm = kernel.createComm(COMM_TARGET);
      this._use(comm);
      quiet(comm.open({ protocol: PROTOCOL }), 'opening the comm');
    } catch (error) {
      warn('could not open a comm to the kernel', error);
    }
  }

  private _use(comm: Kernel.IComm): void {
    this._comm = comm;
    comm.onMsg = msg => {
      if (comm !== this._comm) {
        return;
      }
      const data = msg.content.data;
      const parsed = parseMessage(data);
      if (parsed.ok && parsed.message.kind === 'reply') {
        const pending = this._pending.get(parsed.message.id);
        this._pending.delete(parsed.message.id);
        pending?.resolve(parsed.message.ok ? '' : parsed.message.error || 'refused');
        return;
      }
      this._dispatch({ type: 'message', data });
    };
    comm.onClose = () => {
      if (comm === this._comm) {
        this._comm = null;
        this._answerAll('the kernel closed the connection');
        this._dispatch({ type: 'closed' });
      }
    };
  }

  private _dropComm(): void {
    const comm = this._comm;
    this._comm = null;
    this._answerAll('the kernel changed');
    if (comm && !comm.isDisposed) {
      try {
        quiet(comm.close(), 'closing the comm');
      } catch (error) {
        // The kernel is restarting or gone: nothing to tell it.
      }
    }
  }

  private _answerAll(error: string): void {
    for (const pending of this._pending.values()) {
      pending.resolve(error);
    }
    this._pending.clear();
  }

  private _state: ItemState = INITIAL;
  private _changed = new Signal<this, ItemState>(this);
  private _session: ISessionContext | null = null;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _reconnect = false;
  private _lastId = 0;
  private _pending = new Map<number, IPending>();
}
