import { afterEach, describe, expect, it } from '@jest/globals';
import { errnoText } from '../../../../../src/lib/errno-text';
import {
  TRACKING_ENV,
  requestedTracking,
} from '../../../../../src/components/executor/process/spawner-command';
import { cgroupDir } from '../../../../../src/components/executor/process/helper/task-cgroup';
import type { TrackingKind } from '../../../../../src/components/executor/process/helper/protocol';
import { UsageError } from '../../../../../src/errors';

const ROOT_FS = '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw';

describe('cgroupDir (where a process is in the cgroup v2 tree)', () => {
  it('joins the mount and the path of a hybrid host, v1 controllers beside', () => {
    const mountinfo = [
      ROOT_FS,
      '35 31 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
      '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    ].join('\n');
    const cgroup = '4:memory:/process_api/x\n0::/\n';
    expect(cgroupDir(mountinfo, cgroup)).toEqual({ dir: '/sys/fs/cgroup/unified' });
    expect(cgroupDir(mountinfo, '0::/user.slice/u.scope\n')).toEqual({
      dir: '/sys/fs/cgroup/unified/user.slice/u.scope',
    });
  });

  it('reads a pure v2 host, with optional fields before the separator', () => {
    const mountinfo = `${ROOT_FS}\n30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate`;
    expect(cgroupDir(mountinfo, '0::/system.slice/slurmstepd.scope/job_7\n')).toEqual({
      dir: '/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7',
    });
  });

  it('takes the path relative to the subtree a container mount shows', () => {
    const mountinfo = `${ROOT_FS}\n50 40 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup rw`;
    expect(cgroupDir(mountinfo, '0::/docker/abc/inner\n')).toEqual({
      dir: '/sys/fs/cgroup/inner',
    });
    expect(cgroupDir(mountinfo, '0::/other\n')).toEqual({
      why: "own cgroup '/other' is outside the mounted tree '/docker/abc'",
    });
  });

  it('unescapes the octal escapes of mountinfo', () => {
    const mountinfo = `${ROOT_FS}\n41 31 0:38 / /mnt/cg\\040v2 rw - cgroup2 cgroup2 rw`;
    expect(cgroupDir(mountinfo, '0::/a\n')).toEqual({ dir: '/mnt/cg v2/a' });
  });

  it('says why when there is no v2 tree, or the process is in none', () => {
    expect(cgroupDir(ROOT_FS, '0::/\n')).toEqual({ why: 'no cgroup v2 file system is mounted' });
    const mountinfo = `${ROOT_FS}\n41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw`;
    expect(cgroupDir(mountinfo, '4:memory:/\n')).toEqual({
      why: 'this process is in no cgroup v2',
    });
  });
});

describe('errnoText (how both spawner helpers word an error)', () => {
  it('has its own words for the common codes', () => {
    expect(errnoText('ENOENT', new Error('ENOENT: x, open'))).toBe('no such file or directory');
    expect(errnoText('ENOTDIR', undefined)).toBe('a path component is not a directory');
  });

  it("else takes the description of a file system error's message, else the message", () => {
    const busy = new Error("EBUSY: resource busy or locked, rmdir '/sys/fs/cgroup/x'");
    expect(errnoText('EBUSY', busy)).toBe('resource busy or locked');
    expect(errnoText('EPERM', new Error('spawn /bin/x EPERM'))).toBe('spawn /bin/x EPERM');
  });
});

describe('requestedTracking', () => {
  const saved = process.env[TRACKING_ENV];
  afterEach(() => {
    if (saved === undefined) delete process.env[TRACKING_ENV];
    else process.env[TRACKING_ENV] = saved;
  });

  it('takes the option, else the variable, else leaves the choice to the machine', () => {
    process.env[TRACKING_ENV] = 'proc';
    expect(requestedTracking({ tracking: 'cgroup' })).toBe('cgroup');
    expect(requestedTracking({})).toBe('proc');
    process.env[TRACKING_ENV] = '';
    expect(requestedTracking({})).toBeUndefined();
    delete process.env[TRACKING_ENV];
    expect(requestedTracking({})).toBeUndefined();
  });

  it('refuses an unknown tracking, naming where it came from and the allowed ones', () => {
    process.env[TRACKING_ENV] = 'pids';
    expect(() => requestedTracking({})).toThrow(
      new UsageError(`${TRACKING_ENV} must be one of cgroup, proc, got 'pids'`),
    );
    expect(() => requestedTracking({ tracking: 'v1' as TrackingKind })).toThrow(
      new UsageError("SpawnerPool tracking must be one of cgroup, proc, got 'v1'"),
    );
  });
});
