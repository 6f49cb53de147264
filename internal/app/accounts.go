package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/proxy"
	"github.com/sluicedb/sluice/internal/topology"
)

// accounts.from_primary: the primary's accounts, read with the monitor account every
// accounts.refresh, and at once (at most once a second) when an unknown user tries to log in.

// The queries that read them. MariaDB keeps accounts in mysql.global_priv (its mysql.user is
// a view without the lock); MySQL in mysql.user.
const (
	mariadbAccounts = "SELECT User, Host, IFNULL(JSON_VALUE(Priv, '$.plugin'), ''), " +
		"IFNULL(JSON_VALUE(Priv, '$.authentication_string'), ''), IFNULL(JSON_VALUE(Priv, '$.account_locked'), 'false'), " +
		"IFNULL(JSON_QUERY(Priv, '$.auth_or'), ''), IFNULL(JSON_VALUE(Priv, '$.is_role'), 'false') FROM mysql.global_priv"
	mysqlAccounts = "SELECT User, Host, plugin, authentication_string, account_locked, '', 'false' FROM mysql.user"
)

// accountsOnDemand is the shortest time between two loads a login asks for.
const accountsOnDemand = time.Second

// watchAccounts loads the accounts every refresh until ctx ends.
func (a *App) watchAccounts(ctx context.Context) {
	for {
		a.refreshAccounts(ctx, false)
		t := time.NewTimer(a.boot.Accounts.Refresh.Duration)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// refreshAccounts loads the primary's accounts and hands them to the proxy; onDemand (a login
// of an unknown user) does nothing within accountsOnDemand of the last load. A failed load
// keeps the accounts sluice has.
func (a *App) refreshAccounts(ctx context.Context, onDemand bool) {
	a.acctMu.Lock()
	defer a.acctMu.Unlock()
	if onDemand && time.Since(a.acctLoaded) < accountsOnDemand {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.boot.Timeouts.Connect.Duration)
	defer cancel()
	accts, err := a.loadAccounts(ctx)
	a.acctLoaded = time.Now()
	if err != nil {
		a.log.Warn("accounts from the primary: loading failed; the accounts loaded before stay", "err", err)
		return
	}
	if a.acctCount != len(accts) {
		a.log.Info("accounts from the primary loaded", "accounts", len(accts))
		a.acctCount = len(accts)
	}
	a.proxy.SetAccounts(accts)
}

// loadAccounts reads the primary's accounts over a monitor connection.
func (a *App) loadAccounts(ctx context.Context) ([]proxy.Account, error) {
	snap := a.topo.Snapshot()
	n := snap.Nodes[snap.Primary]
	c, err := a.dialMonitor(ctx, n)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	q := mariadbAccounts
	if topology.FlavorOf(c.Handshake.ServerVersion) == topology.MySQL {
		q = mysqlAccounts
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.NetConn().SetDeadline(dl)
	}
	rows, err := c.Query(q)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the accounts (the monitor account needs SELECT on mysql.global_priv, or mysql.user on MySQL): %w", n.Name, err)
	}
	accts := []proxy.Account{}
	for _, r := range rows.Values {
		if len(r) != 7 || r[6].S == "true" || r[2].S == "" {
			continue // a role, or no plugin
		}
		acct, err := account(r[0].S, r[1].S, r[2].S, r[3].S, r[4].S, r[5].S)
		if err != nil {
			a.log.Warn("accounts from the primary: skipped", "user", r[0].S, "host", r[1].S, "err", err)
			continue
		}
		accts = append(accts, acct)
	}
	return accts, nil
}

// account makes one account from its row: a native hash (or none), from the account's own
// plugin or, on MariaDB, from a native alternative of IDENTIFIED VIA ... OR ... (auth_or).
func account(user, host, plugin, auth, locked, authOr string) (proxy.Account, error) {
	acct := proxy.Account{User: user, Host: host, Plugin: plugin, Locked: locked == "true" || locked == "Y"}
	if plugin != mysql.AuthNativePassword && authOr != "" {
		var alts []struct {
			Plugin string `json:"plugin"`
			Auth   string `json:"authentication_string"`
		}
		if err := json.Unmarshal([]byte(authOr), &alts); err == nil {
			for _, alt := range alts {
				if alt.Plugin == mysql.AuthNativePassword {
					acct.Plugin, auth = alt.Plugin, alt.Auth
					break
				}
			}
		}
	}
	if acct.Plugin != mysql.AuthNativePassword {
		return acct, nil // refused at login, with the reason
	}
	if auth == "" {
		acct.NoPassword = true
		return acct, nil
	}
	h, err := mysql.ParseNativeHash(auth)
	if err != nil {
		return acct, errors.New("a mysql_native_password account without a valid hash")
	}
	acct.Hash = h
	return acct, nil
}

// allowList turns an endpoint's allow entries into networks (validated with the configuration).
func allowList(e config.Endpoint) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range e.Allow {
		if p, err := config.ParseAllow(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}
