// Command sluice is a read/write-splitting proxy for MySQL and MariaDB.
package main

import (
	"os"

	"github.com/sluicedb/sluice/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
