import type { Reason } from '../../generated';
import { reason } from './reasons';

export function canceledBy(component: string): Reason {
  return reason('E_CANCELED', 'task canceled by the user', component);
}
