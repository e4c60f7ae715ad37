/** Path of the Alert rules page under the app (/a/<plugin id>/alert-rules). */
export const ALERT_RULES_ROUTE = 'alert-rules';
