package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

var errAuth = errors.New("authentication failed")

// targetPlugin picks the plugin the client must authenticate with: the user's own if configured,
// else the client's choice when sluice can verify it for this user, else mysql_native_password.
func targetPlugin(u *User, clientPlugin string) string {
	if u != nil && u.Plugin != "" {
		return u.Plugin
	}
	if clientPlugin == mysql.AuthCachingSHA2 && (u == nil || !u.HasHash) {
		return mysql.AuthCachingSHA2
	}
	return mysql.AuthNativePassword
}

// authEnv is what a login is checked against and spoken over: the proxy (its users list,
// accounts from the primary, caching_sha2_password cache, RSA key, auth block), the client's
// connection, and the session's logger.
type authEnv struct {
	p   *Proxy
	c   *mysql.Conn
	log *slog.Logger
	// front counts the failures for the client's endpoint (nil: not counted).
	front *frontStats
}

// deny writes the client its authentication failure se, counted for its endpoint.
func (env authEnv) deny(se *mysql.SQLError) {
	if env.front != nil {
		env.front.authFailures.Add(1)
		env.front.errors.count(se.Code)
	}
	_ = writeErr(env.c, se)
}

// authenticate verifies the client's credentials against the configuration, switching the
// client to another plugin first when needed (always when force is set, as for
// COM_CHANGE_USER), and applies the user's login rules (require_tls, then
// max_user_connections): every login, the first one and each change of user, goes through it.
// On failure the client has been sent its error (1045, a locked account's, 1226: errUserLimit)
// and no node was touched, and l keeps its user (and its place under that user's limit). On
// success l holds the user, a place under its limit and what sluice logs in to the nodes with.
func (l *login) authenticate(env authEnv, name, clientPlugin string, resp []byte, force bool) error {
	u, creds, err := l.checkCredentials(env, name, clientPlugin, resp, force)
	// Each 1045 is counted for the client's address (failed) before the client sees it: its
	// next connection must find the count.
	if err == nil && u.hostDenied {
		l.failed(env)
		// As the server answers: the same 1045 as for a wrong password (1130 after the right
		// one would tell a client on any host when it guessed the password of an account
		// meant for others). The reason goes to sluice's log.
		env.deny(mysql.AccessDenied(name, l.host, l.usedPassword))
		// (Debug: a line written only after the right password would cost time a wrong one
		// does not.)
		env.log.Debug("login refused: no account of the user lets the client's host in", "user", name, "host", l.host)
		return fmt.Errorf("%w: no account of user %q lets in host %s", errAuth, u.Name, l.host)
	}
	if err == nil && u.Locked {
		// After the password, as the server checks it.
		env.deny(mysql.NewError(mysql.ErrAccountLocked, "HY000", "Access denied, this account is locked"))
		return fmt.Errorf("%w: user %s is locked", errAuth, u.Name)
	}
	if err == nil && u.RequireTLS && !l.tls {
		l.failed(env)
		env.deny(mysql.AccessDenied(u.Name, l.host, true))
		return fmt.Errorf("%w: user %s requires TLS", errAuth, u.Name)
	}
	if err != nil {
		return err
	}
	// Last, as the server checks it: a place under the user's max_user_connections. Not an
	// authentication failure (the password was right): not counted as one, nor for the block.
	if se := l.holdUser(env.p.userLimits, name); se != nil {
		if env.front != nil {
			env.front.errors.count(se.Code)
		}
		_ = writeErr(env.c, se)
		return fmt.Errorf("%w: %s", errUserLimit, se.Message)
	}
	l.user, l.creds = u, creds
	return nil
}

// checkCredentials is authenticate without the login rules.
//
// Nothing the client sees before its password is proven depends on whether the user exists or
// how its account is set up: an unknown user is switched to the plugin a known one would be
// (decoyPlugin), its refusal takes the same exchange and no wait of its own (accounts are
// reloaded in the background, not while it waits), and an account sluice cannot verify (its
// plugin) is refused exactly as a wrong password is; the reason goes to sluice's log.
func (l *login) checkCredentials(env authEnv, name, clientPlugin string, resp []byte, force bool) (*User, backend.Credentials, error) {
	p, c := env.p, env.c
	u := p.users[name]
	// hostDenied: accounts come from the primary and none of the user's lets this client's
	// host in. The answer is 1045 whatever the password, as from the server (the password is
	// still checked, against one of the user's accounts or the users list's, so that the
	// refusal costs what any other does).
	hostDenied := false
	t := p.accounts.Load()
	if p.opts.RefreshAccounts != nil {
		if t == nil {
			// Not loaded yet: every login, whoever logs in, waits for the first load.
			p.opts.RefreshAccounts()
			t = p.accounts.Load()
		} else if u == nil && len(t.byUser[name]) == 0 {
			// Perhaps created on the primary a moment ago: reload in the background (rate
			// limited by the caller); this login fails now, as any unknown user's does, and
			// the account logs in once the reload has it.
			p.refreshSoon()
		}
	}
	if t != nil {
		acct, known := t.match(name, l.ip)
		switch {
		case acct != nil && acct.User == "":
			// An anonymous account with a more specific host takes the login, as on the
			// server; sluice logs in to the nodes with the name the client gave, which the
			// node matches to the same account.
			u = acct.user()
			u.Name = name
		case acct == nil && (known || u != nil):
			hostDenied = true
			if u == nil {
				u = t.any(name).user() // the password is checked against one of them
			}
		case u == nil && acct != nil:
			u = acct.user()
		}
	}
	if hostDenied && u != nil {
		u = u.withHostDenied()
	}
	var plugin string
	if u != nil {
		plugin = targetPlugin(u, clientPlugin)
	} else {
		plugin = p.decoyPlugin(name, clientPlugin)
	}
	if force || plugin != clientPlugin {
		if !force {
			l.nonce = newNonce()
		}
		// COM_CHANGE_USER keeps the connection's nonce: MariaDB Connector/C answers the switch
		// with a scramble of the first one whatever the request carries.
		if err := c.WritePacketFlush(mysql.AppendAuthSwitchRequest(nil, plugin, l.nonce)); err != nil {
			return nil, backend.Credentials{}, err
		}
		pkt, err := c.ReadPacket()
		if err != nil {
			return nil, backend.Credentials{}, err
		}
		resp = append([]byte(nil), pkt...)
	}
	l.usedPassword = len(resp) > 0
	deny := func() (*User, backend.Credentials, error) {
		l.failed(env)
		env.deny(mysql.AccessDenied(name, l.host, len(resp) > 0))
		return nil, backend.Credentials{}, fmt.Errorf("%w for user %q", errAuth, name)
	}
	if u == nil {
		if plugin == mysql.AuthNativePassword {
			// The check a known user's answer gets, against a hash no answer matches: the
			// refusal costs the same.
			mysql.VerifyNative(p.decoy.hash, l.nonce, resp)
		}
		if plugin == mysql.AuthCachingSHA2 && len(resp) > 0 {
			// As for a known user whose password sluice has not cached: full authentication
			// first, so the answer does not tell whether the user exists.
			if _, err := l.fullAuth(env); err != nil && !errors.Is(err, errAuth) {
				return nil, backend.Credentials{}, err
			}
		}
		return deny()
	}
	if u.Unsupported != "" {
		// Its password cannot be proven: refused as a wrong password is (the client learns
		// nothing of the account); the operator reads why in the log.
		mysql.VerifyNative(p.decoy.hash, l.nonce, resp) // the cost of a check, as for any account
		env.log.Info("login refused: the account cannot log in through sluice", "user", name, "reason", u.Unsupported)
		_, _, err := deny()
		return nil, backend.Credentials{}, fmt.Errorf("%w: %s", err, u.Unsupported)
	}
	creds := backend.Credentials{User: u.Name}
	if u.HasPassword {
		creds.Password, creds.HasPassword = u.Password, true
	}
	switch plugin {
	case mysql.AuthNativePassword:
		if u.HasHash {
			stage1, ok := mysql.VerifyNative(u.Hash, l.nonce, resp)
			if !ok {
				return deny()
			}
			creds.Stage1, creds.HasStage1 = stage1, true
			return u, creds, nil
		}
		if u.Password == "" {
			if len(resp) != 0 {
				return deny()
			}
			return u, creds, nil
		}
		if _, ok := mysql.VerifyNative(mysql.NativeHash(u.Password), l.nonce, resp); !ok {
			return deny()
		}
		return u, creds, nil
	case mysql.AuthCachingSHA2:
		if !u.HasPassword {
			return deny() // a hash-configured user cannot verify caching_sha2 (config forbids it)
		}
		if u.Password == "" {
			if len(resp) != 0 {
				return deny()
			}
			return u, creds, nil
		}
		if len(resp) == 0 {
			return deny()
		}
		// No fast path for a host the user's accounts do not let in: its answer (fast OK, or
		// full authentication) would tell whether the password is right.
		if !u.hostDenied && p.sha2Cached(u.Name, u.Password) && mysql.VerifyCachingSHA2(u.Password, l.nonce, resp) {
			// Fast path: the server (here sluice) has seen this password since it started.
			if err := c.WritePacket(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FastOK)); err != nil {
				return nil, creds, err
			}
			return u, creds, nil
		}
		password, err := l.fullAuth(env)
		if err != nil {
			if errors.Is(err, errAuth) {
				return deny()
			}
			return nil, creds, err
		}
		if subtle.ConstantTimeCompare([]byte(password), []byte(u.Password)) != 1 {
			return deny()
		}
		if !u.hostDenied {
			p.sha2Remember(u.Name, u.Password)
		}
		return u, creds, nil
	}
	return deny()
}

// fullAuth runs caching_sha2_password's full authentication: the client sends its password, as
// it is over TLS, else encrypted with sluice's RSA public key (which it may ask for first), since
// a cleartext password must not cross an unencrypted connection.
func (l *login) fullAuth(env authEnv) (string, error) {
	c := env.c
	if err := c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth)); err != nil {
		return "", err
	}
	p, err := c.ReadPacket()
	if err != nil {
		return "", err
	}
	if l.tls {
		// Over TLS the client sends the password itself, NUL-terminated.
		if n := len(p); n > 0 && p[n-1] == 0 {
			p = p[:n-1]
		}
		return string(p), nil
	}
	key, pem, err := env.p.rsa()
	if err != nil {
		return "", err
	}
	if len(p) == 1 && p[0] == mysql.CachingSHA2RequestKey {
		if err := c.WritePacketFlush(mysql.AppendAuthMoreData(nil, pem...)); err != nil {
			return "", err
		}
		if p, err = c.ReadPacket(); err != nil {
			return "", err
		}
	}
	if len(p) != key.Size() {
		// Not an RSA block: a cleartext password over an insecure connection is refused.
		return "", errAuth
	}
	password, err := mysql.DecryptPassword(key, p, l.nonce)
	if err != nil {
		return "", errAuth
	}
	return password, nil
}

// decoyPlugins is what an unknown user is switched to, so that the switch looks like one a
// known user gets: the plugins known users are switched to for each client plugin (the users
// list's, and mysql_native_password for accounts from the primary) and a key that picks one of
// them per user name, the same every time for a name (as MySQL does for a user it does not
// know), so that repeated tries do not tell either.
type decoyPlugins struct {
	sha2Client, otherClient pluginSet
	key                     [16]byte
	hash                    [20]byte // what an unknown user's mysql_native_password answer is checked against
}

// pluginSet says which of sluice's two plugins a known user may be switched to.
type pluginSet struct{ native, sha2 bool }

func (ps *pluginSet) add(plugin string) {
	if plugin == mysql.AuthCachingSHA2 {
		ps.sha2 = true
	} else {
		ps.native = true
	}
}

func newDecoyPlugins(users []User) decoyPlugins {
	var d decoyPlugins
	_, _ = rand.Read(d.key[:])
	_, _ = rand.Read(d.hash[:])
	for i := range users {
		d.sha2Client.add(targetPlugin(&users[i], mysql.AuthCachingSHA2))
		d.otherClient.add(targetPlugin(&users[i], mysql.AuthNativePassword))
	}
	return d
}

// decoyPlugin is the plugin user name, which sluice does not know, is switched to for a client
// that chose clientPlugin.
func (p *Proxy) decoyPlugin(name, clientPlugin string) string {
	set := p.decoy.otherClient
	if clientPlugin == mysql.AuthCachingSHA2 {
		set = p.decoy.sha2Client
	}
	if p.accounts.Load() != nil {
		set.native = true // accounts from the primary verify mysql_native_password
	}
	switch {
	case set.native && set.sha2:
		h := hmac.New(sha256.New, p.decoy.key[:])
		h.Write([]byte(name))
		if h.Sum(nil)[0]&1 == 0 {
			return mysql.AuthNativePassword
		}
		return mysql.AuthCachingSHA2
	case set.sha2:
		return mysql.AuthCachingSHA2
	case set.native:
		return mysql.AuthNativePassword
	}
	return targetPlugin(nil, clientPlugin)
}

// refreshSoon reloads the accounts in the background, one reload at a time (the caller of
// RefreshAccounts limits how often it reads the primary).
func (p *Proxy) refreshSoon() {
	if !p.refreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer p.refreshing.Store(false)
		p.opts.RefreshAccounts()
	}()
}
