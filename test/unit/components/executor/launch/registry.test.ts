import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { EXECUTOR_KINDS } from '../../../../../src/components/executor/kinds';
import {
  LAUNCH_METHODS,
  launchMethodOf,
  type LaunchOptions,
} from '../../../../../src/components/executor/launch';
import { task, slot } from './helpers';

describe('launchMethodOf', () => {
  it.each([
    [{}, 'fork'],
    [{ ranks: 1 }, 'fork'],
    [{ ranks: 2 }, 'mpirun'],
    [{ ranks: 1, launch: 'mpirun' as const }, 'mpirun'],
    [{ ranks: 4, launch: 'fork' as const }, 'fork'],
  ])('picks the launch method of %j: %s', (desc, method) => {
    expect(launchMethodOf(task(desc))).toBe(method);
  });
});

describe('launchMethodOf inside a Slurm allocation', () => {
  const SLURM: Pick<LaunchOptions, 'agentNode' | 'srun'> = {
    agentNode: { name: 'n1' },
    srun: { executable: 'srun' },
  };

  it.each([
    ['one rank on the agent node', {}, [slot('n1', [0])], 'fork'],
    ['one rank without a slot', {}, undefined, 'fork'],
    ['one rank on another node', {}, [slot('n2', [0])], 'srun'],
    ['two ranks on the agent node', { ranks: 2 }, [slot('n1', [0]), slot('n1', [1])], 'srun'],
    ['two ranks on two nodes', { ranks: 2 }, [slot('n1', [0]), slot('n2', [0])], 'srun'],
    ['an explicit mpirun', { ranks: 2, launch: 'mpirun' as const }, [slot('n2', [0])], 'mpirun'],
    ['an explicit srun on the agent node', { launch: 'srun' as const }, [slot('n1', [0])], 'srun'],
    ['an explicit fork', { launch: 'fork' as const }, [slot('n2', [0])], 'fork'],
  ])('picks for %s: %s', (_what, desc, slots, method) => {
    expect(launchMethodOf(task(desc, slots), SLURM)).toBe(method);
  });
});

/** The task description schema's enum of a property, read from the JSON file itself. */
function schemaEnum(property: string): string[] {
  const file = path.resolve(__dirname, '../../../../../schemas/task-description.schema.json');
  const schema = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    properties: Record<string, { enum?: string[] }>;
  };
  return schema.properties[property]?.enum ?? [];
}

describe('the registries and the schema', () => {
  it("has one launch method per name of the schema's launch enum, and no other", () => {
    expect(Object.keys(LAUNCH_METHODS).sort()).toEqual(schemaEnum('launch').sort());
    for (const [name, method] of Object.entries(LAUNCH_METHODS)) expect(method.name).toBe(name);
  });

  it('has executor kinds only for modes the schema allows', () => {
    const modes = schemaEnum('mode');
    expect(modes).toContain('executable');
    for (const [mode, kind] of Object.entries(EXECUTOR_KINDS)) {
      expect(modes).toContain(mode);
      expect(kind?.mode).toBe(mode);
    }
  });
});
