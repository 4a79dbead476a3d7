/** Messages as msdebug/views/status.py builds them (tests/test_status.py checks the Python side). */
export function stateMessage(overrides: Record<string, unknown> = {}, protocol: unknown = 1): Record<string, unknown> {
  return {
    protocol,
    kind: 'state',
    state: {
      mindspore: '2.10.0',
      installed: '2.10.0',
      mode: 'PYNATIVE',
      device: 'CPU:0',
      device_fixed: '',
      sync: false,
      sync_fixed: '',
      runtime_started: false,
      print_capture: false,
      summary: 'MindSpore 2.10.0 · PYNATIVE · CPU:0 · sync off · runtime not started',
      first_cell: "import mindspore; mindspore.set_device('CPU', 0)",
      ...overrides
    }
  };
}
