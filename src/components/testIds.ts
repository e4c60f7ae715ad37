export const testIds = {
  appConfig: {
    datasource: 'data-testid ac-datasource',
    submit: 'data-testid ac-submit-form',
  },
  home: {
    container: 'data-testid home-container',
  },
};
