import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../../../src/errors';
import { expandHostlist, MAX_HOSTS } from '../../../../../src/agent/resources/slurm/hostlist';

/** Runs `fn`, expects a ValidationError and returns it. */
function rejection(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error('expected a ValidationError, got none');
}

describe('expandHostlist', () => {
  // expected values are what `scontrol show hostnames LIST` (Slurm 22.05) prints
  it.each([
    ['n1', ['n1']],
    ['n[1-3]', ['n1', 'n2', 'n3']],
    ['n[01-03,7]', ['n01', 'n02', 'n03', 'n7']],
    ['n[8-10]', ['n8', 'n9', 'n10']],
    ['n[08-10]', ['n08', 'n09', 'n10']],
    ['n[001-3]', ['n001', 'n002', 'n003']],
    ['a1,b[2-3]', ['a1', 'b2', 'b3']],
    ['rack[1-2]-n[1-2]', ['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']],
    ['n[1-2]x[3]', ['n1x3', 'n2x3']],
    ['[1-2]', ['1', '2']],
    ['n[1-2],m[5],x', ['n1', 'n2', 'm5', 'x']],
    ['node-a.b_c', ['node-a.b_c']],
  ])('expands %s', (list, hosts) => {
    expect(expandHostlist(list)).toEqual(hosts);
  });

  it('keeps a suffix after the last group', () => {
    expect(expandHostlist('n[1-2]-ib')).toEqual(['n1-ib', 'n2-ib']);
  });

  it('separates hosts by commas or whitespace and skips empty entries, as Slurm does', () => {
    expect(expandHostlist('a , b\tc,,d,')).toEqual(['a', 'b', 'c', 'd']);
    expect(expandHostlist(',a')).toEqual(['a']);
  });

  it('expands an empty or blank list to no hosts', () => {
    expect(expandHostlist('')).toEqual([]);
    expect(expandHostlist('  ')).toEqual([]);
  });

  it('does not split at commas inside brackets', () => {
    expect(expandHostlist('n[1,3],m[2,4-5]')).toEqual(['n1', 'n3', 'm2', 'm4', 'm5']);
  });

  it.each([
    ['n[1-', "'[' is never closed"],
    ['n]1', "']' without '[' at position 1"],
    ['n[[1]]', "nested '[' at position 2"],
    ['n[]', "empty '[]'"],
    ['n[3-1]', "range '3-1' in [3-1] runs backwards"],
    ['n[a-b]', "'a-b' in [a-b] is not a number or a range lo-hi"],
    ['n[1,,2]', "'' in [1,,2] is not a number or a range lo-hi"],
    ['n[1-3-5]', "'1-3-5' in [1-3-5] is not a number or a range lo-hi"],
    ['n[ 1-2]', "' 1-2' in [ 1-2] is not a number or a range lo-hi"],
    ['n(1)', "'n(1)' has a character a host name cannot have"],
  ])('rejects %s, naming the list and the fault', (list, why) => {
    const err = rejection(() => expandHostlist(list));
    expect(err.message).toBe(`malformed Slurm host list '${list}': ${why}`);
    expect(err.issues).toEqual([{ path: '/', message: why }]);
  });

  it(`refuses a list of more than ${MAX_HOSTS} hosts instead of building it`, () => {
    const err = rejection(() => expandHostlist('a[1-1000]-b[1-1000]'));
    expect(err.message).toContain(`expands to more than ${MAX_HOSTS} hosts`);
    expect(rejection(() => expandHostlist('n[0-999999999999]')).message).toContain('more than');
    expect(expandHostlist(`n[1-${MAX_HOSTS}]`)).toHaveLength(MAX_HOSTS);
  });
});
