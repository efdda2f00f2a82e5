package testbed

import (
	"fmt"
	"net"
)

// freeLoopbackPorts asks the kernel for n distinct free TCP ports on
// 127.0.0.1. All n listeners are open at once, so the ports differ; they are
// closed before returning, so another process could in principle take one
// before the testbed binds it, which the kernel's randomized choice makes
// unlikely.
func freeLoopbackPorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, fmt.Errorf("finding a free loopback port: unexpected address %v", l.Addr())
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
