import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { endedIn, tempDirs } from '../../support/temp-dirs';
import { fixtures, type Fixture } from '../../support/session-fixture';

describe('staging directives on a local pilot, end to end', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-client-');
  /** A directory on the client's side, with in.txt in it. */
  function clientDir(): string {
    const d = temp.make();
    fs.writeFileSync(path.join(d, 'in.txt'), 'from the client\n');
    return d;
  }
  const pilotSandbox = (fx: Fixture): string => path.join(fx.session.dir, fx.pilot.uid);

  it('stages input by copy, link and move from client://, pilot:// and absolute paths', async () => {
    const fx = await fixture.open();
    const client = clientDir();
    fs.writeFileSync(path.join(client, 'move-me'), 'moved\n');
    fs.mkdirSync(pilotSandbox(fx), { recursive: true });
    fs.writeFileSync(path.join(pilotSandbox(fx), 'shared.txt'), 'shared on the pilot\n');
    const compute = clientDir(); // an absolute path on the compute side (this machine)
    fs.writeFileSync(path.join(compute, 'abs.txt'), 'absolute\n');
    const [t] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'cat in.txt inputs/linked.txt inbox/move-me shared.txt abs.txt'],
        inputStaging: [
          // relative to the client's working directory
          {
            source: `client://${path.relative(process.cwd(), `${client}/in.txt`)}`,
            target: 'task://',
          },
          {
            source: `client://${client}/in.txt`,
            target: 'task://inputs/linked.txt',
            action: 'link',
          },
          { source: `client://${client}/move-me`, target: 'task://inbox/', action: 'move' },
          { source: 'pilot://shared.txt', target: 'task://shared.txt' },
          { source: `${compute}/abs.txt`, target: 'task://abs.txt' },
        ],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.reason).toBeUndefined();
    expect(t!.state).toBe('DONE');
    expect(t!.stdout).toBe(
      'from the client\nfrom the client\nmoved\nshared on the pilot\nabsolute\n',
    );
    expect(fs.readlinkSync(path.join(t!.sandbox!, 'inputs', 'linked.txt'))).toBe(
      `${client}/in.txt`,
    );
    expect(fs.existsSync(`${client}/move-me`)).toBe(false);
    expect(t!.description.inputStaging?.[0]?.source).toMatch(/^client:\/\//); // as written
  }, 40_000);

  it('stages output back to client:// for a task that succeeded and for one that failed', async () => {
    const fx = await fixture.open();
    const client = clientDir();
    const [ok, bad] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo ok > result.txt'],
        outputStaging: [{ source: 'task://result.txt', target: `client://${client}/ok/` }],
      },
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo partial > result.txt; echo boom >&2; exit 3'],
        output: 'files', // its stderr a file in its sandbox, to stage
        outputStaging: [
          { source: 'task://result.txt', target: `client://${client}/bad/result.txt` },
          { source: 'task://stderr', target: `client://${client}/bad/stderr` },
          { source: 'task://core', target: `client://${client}/bad/core` },
        ],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(ok!.state).toBe('DONE');
    expect(fs.readFileSync(`${client}/ok/result.txt`, 'utf8')).toBe('ok\n');
    expect(bad!.state).toBe('FAILED');
    expect(bad!.exitCode).toBe(3);
    expect(fs.readFileSync(`${client}/bad/result.txt`, 'utf8')).toBe('partial\n');
    expect(fs.readFileSync(`${client}/bad/stderr`, 'utf8')).toBe('boom\n');
    // its own reason stays; the directive that failed is in its detail
    expect(bad!.reason).toMatchObject({
      code: 'E_EXIT_CODE',
      message: 'task exited with code 3: boom',
      detail: {
        exitCode: 3,
        staging: [expect.objectContaining({ directive: 2, errno: 'ENOENT' })],
      },
    });
  }, 40_000);

  it('fails a task with a missing source in the staging state that owns it, naming the file', async () => {
    const fx = await fixture.open();
    const client = clientDir();
    const [input, output, optional] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/true',
        inputStaging: [{ source: `client://${client}/nope.txt`, target: 'task://' }],
      },
      {
        executable: '/bin/true',
        outputStaging: [{ source: 'task://never-written', target: `client://${client}/out` }],
      },
      {
        executable: '/bin/true',
        inputStaging: [
          { source: `client://${client}/nope.txt`, target: 'task://', optional: true },
        ],
        outputStaging: [
          { source: 'task://never-written', target: `client://${client}/out`, optional: true },
        ],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(input!.state).toBe('FAILED');
    // its owner (the reason's component) ended it there, and it went no further
    expect(endedIn(input!, 'AGENT_STAGING_INPUT')).toBe(true);
    expect(input!.reason).toMatchObject({
      code: 'E_STAGING',
      component: 'AgentInputStager',
      message: `inputStaging[0] (copy client://${client}/nope.txt -> task://): ${client}/nope.txt: no such file or directory (ENOENT)`,
    });
    expect(output!.state).toBe('FAILED');
    expect(endedIn(output!, 'AGENT_STAGING_OUTPUT')).toBe(true);
    expect(output!.exitCode).toBe(0);
    expect(output!.reason).toMatchObject({
      code: 'E_STAGING',
      component: 'AgentOutputStager',
      detail: { directive: 0, errno: 'ENOENT', path: `${output!.sandbox}/never-written` },
    });
    expect(optional!.state).toBe('DONE');
  }, 40_000);
});
