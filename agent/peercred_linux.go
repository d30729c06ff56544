package agent

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeer lets in the socket's owner and root only.
func checkPeer(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("permission denied: cannot tell who connects: %v", credErr)
	}
	if owner := os.Geteuid(); int(cred.Uid) != owner && cred.Uid != 0 {
		return fmt.Errorf("permission denied: uid %d may not control process %d, which only uid %d and root may control", cred.Uid, os.Getpid(), owner)
	}
	return nil
}
