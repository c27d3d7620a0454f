import { describe, expect, it } from '@jest/globals';
import { parseEndTime } from '../../../../../src/agent/resources/slurm/job-end';

describe('parseEndTime', () => {
  it("reads EndTime of a `scontrol show job -o` line in the node's local time", () => {
    const line =
      'JobId=42 JobName=pilot UserId=u(1000) JobState=RUNNING RunTime=00:00:05 TimeLimit=00:03:00 ' +
      'SubmitTime=2026-11-24T20:13:35 StartTime=2026-11-24T20:13:40 EndTime=2026-11-24T20:16:40 Deadline=N/A';
    expect(parseEndTime(line)).toBe(new Date(2026, 10, 24, 20, 16, 40).getTime());
  });

  it('says nothing of a job without an end (UNLIMITED) or a line without EndTime', () => {
    expect(
      parseEndTime('JobId=1 TimeLimit=UNLIMITED EndTime=Unknown Deadline=N/A'),
    ).toBeUndefined();
    expect(parseEndTime('slurm_load_jobs error: Invalid job id specified')).toBeUndefined();
  });
});
