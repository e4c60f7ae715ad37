import { ROUTES } from '../../constants';

/** Path of the Triage page under the app (/a/<plugin id>/triage); alert annotations link here. */
export const TRIAGE_ROUTE = ROUTES.Triage;
