import React from 'react';
import { Route, Routes } from 'react-router-dom';
import { AppRootProps } from '@grafana/data';

import { AppSettings, ROUTES } from '../../constants';

const Home = React.lazy(() => import('../../pages/Home/Home'));

function App({ meta }: AppRootProps<AppSettings>) {
  const settings = meta.jsonData ?? {};
  return (
    <Routes>
      <Route path={ROUTES.Home} element={<Home settings={settings} />} />
      {/* Default page */}
      <Route path="*" element={<Home settings={settings} />} />
    </Routes>
  );
}

export default App;
