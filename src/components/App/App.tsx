import React from 'react';
import { Route, Routes } from 'react-router-dom';
import { AppRootProps } from '@grafana/data';

import { setMaxAnswerSize } from '../../api/bounded';
import { AppSettings, ROUTES } from '../../constants';
import { ALERT_RULES_ROUTE } from '../../pages/AlertRules/route';
import { GATE_ROUTE } from '../../pages/Gate/route';
import { TRIAGE_ROUTE } from '../../pages/Triage/route';

const Home = React.lazy(() => import('../../pages/Home/Home'));
const AlertRules = React.lazy(() => import('../../pages/AlertRules/AlertRules'));
const Triage = React.lazy(() => import('../../pages/Triage/Triage'));
const Gate = React.lazy(() => import('../../pages/Gate/Gate'));

function App({ meta }: AppRootProps<AppSettings>) {
  const settings = meta.jsonData ?? {};
  setMaxAnswerSize(settings.maxAnswerSize);
  return (
    <Routes>
      <Route path={ROUTES.Home} element={<Home settings={settings} />} />
      <Route path={ALERT_RULES_ROUTE} element={<AlertRules settings={settings} />} />
      <Route path={TRIAGE_ROUTE} element={<Triage settings={settings} />} />
      <Route path={GATE_ROUTE} element={<Gate settings={settings} />} />
      {/* Default page */}
      <Route path="*" element={<Home settings={settings} />} />
    </Routes>
  );
}

export default App;
