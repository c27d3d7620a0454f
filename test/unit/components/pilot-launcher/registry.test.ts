import { describe, expect, it } from '@jest/globals';
import { PILOT_LAUNCHERS } from '../../../../src/components/pilot-launcher/registry';
import schema from '../../../../schemas/pilot-description.schema.json';

describe('PILOT_LAUNCHERS', () => {
  it('has one launcher for each resource the pilot description schema allows, and no other', () => {
    expect(Object.keys(PILOT_LAUNCHERS).sort()).toEqual(
      [...schema.properties.resource.enum].sort(),
    );
  });
});
