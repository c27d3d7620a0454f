import { describe, expect, it } from '@jest/globals';
import { placeInPilotSandbox } from '../../../../src/client/tasks/output';
import { Task } from '../../../../src/client/task';
import { Interner } from '../../../../src/lib/strings';

const PILOTS: Record<string, string> = { 'pilot.0': '/s/pilot.0', 'pilot.1': '/s/pilot.1' };
const sandboxOf = (p: string): string | undefined => PILOTS[p];

function task(): Task {
  return new Task('task.7', { executable: '/bin/true' });
}

describe('placeInPilotSandbox: a task told where its output goes and of no sandbox of its own', () => {
  const dirs = new Interner();

  it("runs in its pilot's sandbox: that is its sandbox", () => {
    const t = task();
    t.pilot = 'pilot.0';
    t.output = 'stream';
    placeInPilotSandbox(t, { output: 'stream' }, sandboxOf, dirs);
    expect(t.sandbox).toBe('/s/pilot.0');
  });

  it('keeps a sandbox of its own, named with its output', () => {
    const t = task();
    t.pilot = 'pilot.0';
    t.output = 'files';
    t.setSandbox('/s/pilot.0/task.7', dirs);
    placeInPilotSandbox(t, { output: 'files', sandbox: '/s/pilot.0/task.7' }, sandboxOf, dirs);
    expect(t.sandbox).toBe('/s/pilot.0/task.7');
  });

  it('waits for its pilot when the output comes first, and takes it from the late note', () => {
    const t = task();
    t.output = 'stream';
    placeInPilotSandbox(t, { output: 'stream' }, sandboxOf, dirs);
    expect(t.sandbox).toBeUndefined();
    t.pilot = 'pilot.1';
    placeInPilotSandbox(t, { pilot: 'pilot.1' }, sandboxOf, dirs);
    expect(t.sandbox).toBe('/s/pilot.1');
  });

  it('a late note naming the pilot leaves a sandbox of its own as it is', () => {
    const t = task();
    t.pilot = 'pilot.0';
    t.output = 'stream';
    t.setSandbox('/s/pilot.0/task.7', dirs); // it had staging directives
    placeInPilotSandbox(t, { pilot: 'pilot.0' }, sandboxOf, dirs);
    expect(t.sandbox).toBe('/s/pilot.0/task.7');
  });

  it("a new attempt on another pilot: that pilot's sandbox, not the last one's", () => {
    const t = task();
    t.pilot = 'pilot.0';
    t.output = 'stream';
    placeInPilotSandbox(t, { output: 'stream' }, sandboxOf, dirs);
    t.pilot = 'pilot.1';
    placeInPilotSandbox(t, { output: 'stream' }, sandboxOf, dirs);
    expect(t.sandbox).toBe('/s/pilot.1');
  });

  it('says nothing while the output is not known (a function call, or not staged yet)', () => {
    const t = task();
    t.pilot = 'pilot.0';
    placeInPilotSandbox(t, { pilot: 'pilot.0' }, sandboxOf, dirs);
    expect(t.sandbox).toBeUndefined();
  });
});
