import { ROUTES } from '../../constants';

/** Path of the Release gate page under the app (/a/<plugin id>/gate). */
export const GATE_ROUTE = ROUTES.Gate;
