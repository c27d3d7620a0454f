import { describe, expect, it } from '@jest/globals';
import pilotStateSchema from '../../../schemas/pilot-state.schema.json';
import taskStateSchema from '../../../schemas/task-state.schema.json';
import { PILOT_STATES } from '../../../src/states/pilot-model';
import { PIPELINE, hopOf, sideOf } from '../../../src/states/pipeline';
import { TASK_STATES } from '../../../src/states/task-model';

describe('PIPELINE', () => {
  it('has one queue per holding component, in model order, each accepting its X_PENDING', () => {
    expect(PIPELINE.map((h) => [h.component, h.arrives, h.takes, h.side])).toEqual([
      ['ManagerScheduler', 'TMGR_SCHEDULING_PENDING', 'TMGR_SCHEDULING', 'client'],
      ['ManagerInputStager', 'TMGR_STAGING_INPUT_PENDING', 'TMGR_STAGING_INPUT', 'client'],
      ['AgentInputStager', 'AGENT_STAGING_INPUT_PENDING', 'AGENT_STAGING_INPUT', 'agent'],
      ['AgentScheduler', 'AGENT_SCHEDULING_PENDING', 'AGENT_SCHEDULING', 'agent'],
      ['Executor', 'AGENT_EXECUTING_PENDING', 'AGENT_EXECUTING', 'agent'],
      ['AgentOutputStager', 'AGENT_STAGING_OUTPUT_PENDING', 'AGENT_STAGING_OUTPUT', 'agent'],
      ['ManagerOutputStager', 'TMGR_STAGING_OUTPUT_PENDING', 'TMGR_STAGING_OUTPUT', 'client'],
    ]);
  });

  it('names the side that holds a task in each state, and nobody for a final one', () => {
    expect(sideOf('NEW')).toBe('client');
    expect(sideOf('AGENT_STAGING_INPUT_PENDING')).toBe('agent');
    expect(sideOf('TMGR_STAGING_OUTPUT')).toBe('client');
    expect(sideOf('DONE')).toBeUndefined();
    expect(hopOf('Executor').arrives).toBe('AGENT_EXECUTING_PENDING');
    expect(() => hopOf('TaskManager')).toThrow('has no queue');
  });
});

describe('state enums in the schemas', () => {
  it("are the models' own state lists, in model order", () => {
    expect(taskStateSchema.enum).toEqual([...TASK_STATES]);
    expect(pilotStateSchema.enum).toEqual([...PILOT_STATES]);
  });
});
