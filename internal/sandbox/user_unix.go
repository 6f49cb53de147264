//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// runAs is the OS account the servers run as, when we are root.
type runAs struct {
	name     string // "" = not root: no user= option, no chown
	uid, gid int
}

// chooseUser decides which OS user the servers run as. mariadbd and mysqld refuse to run as
// root unless told a user: as root we prefer the packaged "mysql" account, falling back to
// root itself when there is no such account or when it cannot reach dir (for example a
// t.TempDir under a 0700 parent), since a server that cannot open its datadir fails late and
// obscurely. As an ordinary user the servers simply run as that user.
func chooseUser(dir string) (runAs, string) {
	if os.Geteuid() != 0 {
		return runAs{}, ""
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return runAs{name: "root", uid: 0, gid: 0}, "no OS user mysql: servers run as root"
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return runAs{name: "root", uid: 0, gid: 0}, "OS user mysql has no numeric ids: servers run as root"
	}
	groups := map[int]bool{gid: true}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.Atoi(s); err == nil {
				groups[g] = true
			}
		}
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if !traversable(p, uid, groups) {
			return runAs{name: "root", uid: 0, gid: 0}, fmt.Sprintf("OS user mysql cannot enter %s: servers run as root", p)
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return runAs{name: "mysql", uid: uid, gid: gid}, ""
}

// traversable reports whether uid (with groups) may search directory p.
func traversable(p string, uid int, groups map[int]bool) bool {
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	mode := st.Mode().Perm()
	switch {
	case int(sys.Uid) == uid:
		return mode&0o100 != 0
	case groups[int(sys.Gid)]:
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}

// chownTree gives a tree to the server's user; a no-op when we are not root or run as root.
func (r runAs) chownTree(root string) error {
	if r.name == "" || r.uid == 0 {
		return nil
	}
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, r.uid, r.gid)
	})
}
