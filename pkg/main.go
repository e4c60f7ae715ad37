// Command gpx_inferscope_datasource is the Inferscope data source's backend. Grafana starts it
// and talks to it over the plugin gRPC protocol.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	ds "github.com/inferscope/inferscope/pkg/datasource"
)

// version is set by the SDK's mage build (-X main.version) from package.json.
var version = "dev"

func main() {
	if err := datasource.Manage(ds.PluginID, ds.NewFactory(version), datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error("Data source stopped", "error", err.Error())
		os.Exit(1)
	}
}
