import type { TaskRecord, WaitReason } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import type { OpenDependency } from './dependencies';
import { sizeOf, type PilotRoom } from './pilot-room';

const ME = COMPONENTS.managerScheduler;

/** A task held by the DependencyGate: the dependencies it waits for, each with what it lacks. */
export function dependencyWait(open: readonly OpenDependency[], since: number): WaitReason {
  return {
    kind: 'dependencies',
    message: dependencyMessage(open),
    component: ME,
    ts: since,
    dependencies: open.map((d) => ({ task: d.task, on: d.on, waitsFor: d.waitsFor })),
  };
}

/**
 * A task whose dependencies are met and that no pilot took yet (late binding: a pilot takes a
 * task once it is active and has room): none added, none active yet, or none with room.
 */
export function pilotWait(
  task: TaskRecord,
  rooms: readonly PilotRoom[],
  since: number,
  now: number = since,
): WaitReason {
  const base = { kind: 'pilot' as const, component: ME, ts: since };
  const d = task.description;
  const size = sizeOf(d);
  const usable = rooms.filter(
    (p) =>
      (d.pilot === undefined || p.uid === d.pilot) &&
      (!p.reported || p.fitsEver(size.cores, size.gpus)),
  );
  if (usable.length === 0) {
    const message =
      d.pilot !== undefined
        ? `waiting for its pilot ${d.pilot}, which is not added yet`
        : 'waiting for a pilot: none is added to the session yet (tmgr.addPilots)';
    return { ...base, message, pilots: d.pilot !== undefined ? [d.pilot] : [] };
  }
  const active = usable.filter((p) => p.active);
  const names = (ps: readonly PilotRoom[]): string[] => ps.map((p) => p.uid);
  if (active.length > 0 && !active.some((p) => p.hasTime(d.walltimeS, now))) {
    const left = usable.map((p) =>
      p.active
        ? `${p.uid} drains in ${Math.floor(p.secondsLeft(now) ?? 0)} s`
        : `${p.uid} not active yet`,
    );
    const what =
      d.walltimeS === undefined
        ? 'a pilot that has not drained'
        : `a pilot with ${d.walltimeS} s left (walltimeS)`;
    const message = `waiting for ${what}: ${left.join(', ')}`;
    return { ...base, message, pilots: names(usable) };
  }
  if (active.length === 0) {
    // a pilot whose estimated size is too small may have more: its agent says once it is up
    const guessed = usable.filter((p) => !p.fitsEver(size.cores, size.gpus));
    const sizes =
      guessed.length === 0
        ? ''
        : ` (the size of ${names(guessed).join(', ')} is known once its agent reports: estimated ${guessed.map((p) => `${p.cores} cores, ${p.gpus} GPUs`).join('; ')})`;
    const message = `waiting for a pilot to become active: ${names(usable).join(', ')} not active yet${sizes}`;
    return { ...base, message, pilots: names(usable) };
  }
  const timed = active.filter((p) => p.hasTime(d.walltimeS, now));
  const full = timed.filter((p) => !p.hasRoom(size));
  const message =
    full.length === timed.length
      ? `waiting for room on pilot(s) ${names(timed).join(', ')}: each holds as many tasks as it can run and queue now (${timed.map((p) => `${p.uid}: ${p.heldCores} cores given of ${p.cores}`).join('; ')})`
      : `waiting for room on pilot(s) ${names(timed).join(', ')}: an earlier task waits for it first`;
  return { ...base, message, pilots: names(timed) };
}

/** The line for dependencies not met yet, with the state of each where one is known. */
export function dependencyMessage(
  open: readonly { task: string; waitsFor: 'end' | 'ready'; state?: string }[],
): string {
  const what = open.map((d) => {
    const lacks = d.waitsFor === 'ready' ? 'not yet ready' : 'not yet ended';
    return `${d.task} (${d.state !== undefined ? `${d.state}, ` : ''}${lacks})`;
  });
  return `waiting for dependencies: ${what.join(', ')}`;
}
