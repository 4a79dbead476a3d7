/**
 * The one comm between this front end and the kernel of the active notebook or console.
 *
 * The kernel's msdebug registers the comm target `msdebug` when it loads, and opens a comm
 * to this front end at that moment; this side opens one when it starts following a kernel
 * whose msdebug was loaded before (page reload, another notebook). Whatever goes wrong
 * here is logged with the `msdebug:` prefix and leaves JupyterLab alone.
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
      this._open();
    }
  }

  private _attach(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this._kernel) {
      return;
    }
    this._dropComm();
    this._kernel = kernel;
    this._reconnect = false;
    this._dispatch({ type: 'kernel', present: kernel !== null });
    if (!kernel) {
      return;
    }
    if (!this._registered.has(kernel)) {
      try {
        kernel.registerCommTarget(COMM_TARGET, (comm, msg) => this._onKernelOpened(kernel, comm, msg));
        this._registered.add(kernel);
      } catch (error) {
        warn('could not register the comm target', error);
      }
    }
    this._open();
  }

  /** Open a comm to the kernel; a kernel without msdebug closes it right away. */
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

  /** The kernel opened a comm: msdebug was just loaded there. */
  private _onKernelOpened(kernel: Kernel.IKernelConnection, comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void {
    if (kernel !== this._kernel) {
      quiet(comm.close(), 'closing a comm'); // a kernel not followed now; it reconnects on switching back
      return;
    }
    this._dropComm();
    this._use(comm);
    this._dispatch({ type: 'message', data: msg.content.data });
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
  private _registered = new WeakSet<Kernel.IKernelConnection>();
  private _reconnect = false;
  private _lastId = 0;
  private _pending = new Map<number, IPending>();
}
