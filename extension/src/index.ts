/**
 * msdebug's status-bar item: wiring only. What the item shows and what the actions do
 * comes from the pure modules (protocol, state, label); the comm lives in link.
 */

import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Clipboard, ICommandPalette, ISessionContext, Notification } from '@jupyterlab/apputils';
import { ConsolePanel, IConsoleTracker } from '@jupyterlab/console';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Signal } from '@lumino/signaling';
import { Menu, Widget } from '@lumino/widgets';

import { DEFAULT_FIELDS, Field, chooseFields, label } from './label';
import { KernelLink, warn } from './link';
import { ACTIONS, ActionName, PANEL_CELL, actionFor, actionLabel, disabledReason, firstCell } from './state';

const PLUGIN_ID = 'msdebug:plugin';

/** Command ids, one per menu entry; people can bind keys to them in the shortcut settings. */
const COMMANDS: Record<ActionName, string> = {
  mode: 'msdebug:switch-mode',
  sync: 'msdebug:switch-sync',
  capture: 'msdebug:switch-print-capture',
  panel: 'msdebug:open-panel',
  'first-cell': 'msdebug:copy-first-cell'
};

/** The item in the status bar: a text that opens the menu when clicked. */
class StatusItem extends Widget {
  constructor(onClick: (item: StatusItem) => void) {
    super();
    this.addClass('jp-StatusBar-TextItem');
    this.addClass('msdebug-StatusItem');
    this.node.setAttribute('role', 'button');
    this.node.addEventListener('click', () => onClick(this));
  }

  show_(text: string, title: string, greyed: boolean): void {
    this.node.textContent = text;
    this.node.title = title;
    this.node.classList.toggle('msdebug-mod-greyed', greyed);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: "MindSpore's runtime context in the status bar, with commands to change it.",
  autoStart: true,
  optional: [IStatusBar, INotebookTracker, IConsoleTracker, ICommandPalette, ISettingRegistry, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    statusBar: IStatusBar | null,
    notebooks: INotebookTracker | null,
    consoles: IConsoleTracker | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    labShell: ILabShell | null
  ) => {
    const link = new KernelLink();
    let enabled = true;
    let fields: Field[] = [...DEFAULT_FIELDS];
    let current: NotebookPanel | ConsolePanel | null = null;
    const activeChanged = new Signal<KernelLink, void>(link);

    const menu = new Menu({ commands: app.commands });
    menu.addClass('msdebug-Menu');
    menu.title.label = 'MindSpore';
    for (const name of ACTIONS) {
      menu.addItem({ command: COMMANDS[name] });
    }

    const item = new StatusItem(widget => {
      const rect = widget.node.getBoundingClientRect();
      menu.open(rect.left, rect.top, { forceY: false });
    });

    const render = () => {
      const shown = label(link.state, fields);
      item.show_(shown.text, shown.title, shown.greyed);
      activeChanged.emit();
      // Only this extension's commands: a change of all of them re-renders the whole palette.
      for (const name of ACTIONS) {
        app.commands.notifyCommandChanged(COMMANDS[name]);
      }
    };

    // Follow whichever notebook or console is in front; other panels keep the last one.
    const followWidget = (widget: unknown) => {
      const panel =
        notebooks?.has(widget as any) || consoles?.has(widget as any)
          ? (widget as NotebookPanel | ConsolePanel)
          : null;
      if (panel) {
        current = panel;
        link.follow(panel.sessionContext as ISessionContext);
      } else if (current?.isDisposed) {
        current = null;
        link.follow(null);
      }
    };
    if (labShell) {
      labShell.currentChanged.connect((_, change) => followWidget(change.newValue));
    }
    notebooks?.currentChanged.connect((_, panel) => followWidget(panel ?? app.shell.currentWidget));
    consoles?.currentChanged.connect((_, panel) => followWidget(panel ?? app.shell.currentWidget));
    link.changed.connect(render);

    const act = async (name: ActionName) => {
      try {
        const action = actionFor(link.state, name);
        if (action) {
          const error = await link.request(action);
          if (error) {
            Notification.error(`msdebug: ${error}`, { autoClose: 8000 });
          }
        } else if (name === 'panel') {
          await openPanel(current);
        } else if (name === 'first-cell') {
          Clipboard.copyToSystem(firstCell(link.state));
          Notification.info('msdebug: copied; restart the kernel and make it the first cell', { autoClose: 5000 });
        }
      } catch (error) {
        warn(`the command ${COMMANDS[name]} failed`, error);
      }
    };

    for (const name of ACTIONS) {
      app.commands.addCommand(COMMANDS[name], {
        label: () => actionLabel(link.state, name),
        caption: () => disabledReason(link.state, name) || actionLabel(link.state, name),
        isEnabled: () => disabledReason(link.state, name) === '',
        execute: () => act(name)
      });
      palette?.addItem({ command: COMMANDS[name], category: 'msdebug' });
    }

    if (statusBar) {
      statusBar.registerStatusItem(PLUGIN_ID, {
        item,
        align: 'left',
        rank: 4,
        isActive: () => enabled && link.state.phase !== 'none',
        activeStateChanged: activeChanged
      });
    }

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const read = () => {
            enabled = settings.get('enabled').composite !== false;
            fields = chooseFields(settings.get('fields').composite);
            render();
          };
          read();
          settings.changed.connect(read);
        })
        .catch(error => warn('could not read the settings; using the defaults', error));
    }

    followWidget(app.shell.currentWidget);
    render();
  }
};

/** Run `%mscontext --panel` in a new cell below the active one (or in the console). */
async function openPanel(panel: NotebookPanel | ConsolePanel | null): Promise<void> {
  if (panel instanceof NotebookPanel) {
    const notebook = panel.content;
    // An empty active cell (the one Shift+Enter left at the end) takes the code; else a new one below.
    if (notebook.activeCell?.model.sharedModel.getSource().trim() !== '') {
      NotebookActions.insertBelow(notebook);
    }
    notebook.activeCell?.model.sharedModel.setSource(PANEL_CELL);
    await NotebookActions.run(notebook, panel.sessionContext);
  } else if (panel instanceof ConsolePanel) {
    panel.console.promptCell?.model.sharedModel.setSource(PANEL_CELL);
    await panel.console.execute(true);
  }
}

export default plugin;
