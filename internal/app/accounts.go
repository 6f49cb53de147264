package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/pause"
	"github.com/sluicedb/sluice/internal/proxy"
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
		if !pause.For(ctx, a.boot.Accounts.Refresh.Duration) {
			return
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
	accts, rules, err := a.loadAccounts(ctx)
	a.acctLoaded = time.Now()
	if err != nil {
		a.log.Warn("accounts from the primary: loading failed; the accounts loaded before stay", "err", err)
		return
	}
	if a.acctCount != len(accts) {
		a.log.Info("accounts from the primary loaded", "accounts", len(accts))
		a.acctCount = len(accts)
	}
	a.proxy.SetAccounts(accts, rules)
}

// loadAccounts reads the primary's accounts over a monitor connection, and how it matches
// client hosts to them: whether it reads IP/prefix-length hosts (MySQL from 8.0.23; MariaDB
// knows only IP/netmask) and whether it resolves client addresses (skip_name_resolve).
func (a *App) loadAccounts(ctx context.Context) ([]proxy.Account, proxy.HostRules, error) {
	var rules proxy.HostRules
	snap := a.topo.Snapshot()
	n := snap.Nodes[snap.Primary]
	c, err := a.dialMonitor(ctx, n)
	if err != nil {
		return nil, rules, err
	}
	defer c.Quit()
	q := mariadbAccounts
	mysqlFlavor := gtid.FlavorOf(c.Handshake.ServerVersion) == gtid.MySQL
	if mysqlFlavor {
		q = mysqlAccounts
		rules.CIDR = cidrHosts(c.Handshake.ServerVersion)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.NetConn().SetDeadline(dl)
	}
	sr, err := c.Query("SELECT @@skip_name_resolve")
	if err != nil {
		return nil, rules, fmt.Errorf("%s: reading skip_name_resolve: %w", n.Name, err)
	}
	if len(sr.Values) != 1 || len(sr.Values[0]) != 1 {
		return nil, rules, fmt.Errorf("%s: reading skip_name_resolve: no value", n.Name)
	}
	rules.ResolveNames = sr.Values[0][0].S == "0"
	rows, err := c.Query(q)
	if err != nil {
		return nil, rules, fmt.Errorf("%s: reading the accounts (the monitor account needs SELECT on mysql.global_priv, or mysql.user on MySQL): %w", n.Name, err)
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
	return accts, rules, nil
}

// cidrHosts reports whether a MySQL server of this version reads IP/prefix-length account
// hosts (8.0.23 and later).
func cidrHosts(version string) bool {
	var major, minor, patch int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); err != nil {
		return false
	}
	return major > 8 || major == 8 && (minor > 0 || patch >= 23)
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
