package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sluicedb/sluice/internal/app"
	"github.com/sluicedb/sluice/internal/config"
)

// checkMonitor is the second half of `sluice serve --check`: it logs in to every node as the
// monitor account and prints how each went. A node that refuses the credentials fails the
// check (exit 1): running so, sluice would learn nothing of that node. A node it cannot reach
// is reported and does not: the file may well be checked where the nodes are not reachable.
func checkMonitor(cfg *config.Config, stdout io.Writer) int {
	logins, err := app.CheckMonitor(context.Background(), cfg)
	if err != nil {
		fmt.Fprintf(stdout, "monitor: %v\n", err)
		return 1
	}
	code := 0
	for _, l := range logins {
		switch {
		case l.Err == nil:
			fmt.Fprintf(stdout, "monitor login as %s on %s (%s): ok\n", cfg.Monitor.User, l.Node, l.Address)
		case l.Denied:
			fmt.Fprintf(stdout, "monitor login as %s on %s (%s): REFUSED: %v (check monitor.user and monitor.password, the account on the node, and with proxy_protocol the node's proxy_protocol_networks)\n",
				cfg.Monitor.User, l.Node, l.Address, l.Err)
			code = 1
		default:
			fmt.Fprintf(stdout, "monitor login as %s on %s (%s): not checked: %v\n", cfg.Monitor.User, l.Node, l.Address, l.Err)
		}
	}
	return code
}
