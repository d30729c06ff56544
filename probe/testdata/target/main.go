// Command target is the program the probe tests attach to. It waits for a
// line on stdin (sent once the probes are in place), runs a workload
// chosen by its first argument, and prints what it did, so tests compare
// the probes' counts with the program's own.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:noinline
func work(n int, s string) (int, string) {
	if n%3 == 0 {
		return n * 2, s + "!"
	}
	return n + len(s), s
}

//go:noinline
func grow(depth int) int {
	var pad [512]byte
	pad[depth%512] = byte(depth)
	if depth == 0 {
		return int(pad[0])
	}
	return depth + grow(depth-1) + int(pad[depth%512]) - int(byte(depth))
}

//go:noinline
func tiny(x int) int { return x + 1 }

// double is inlined into main.loop (and has code there: the panic).
func double(x int) int {
	y := 2 * x
	if y < 0 {
		panic("negative")
	}
	return y
}

//go:noinline
func loop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += tiny(i) + double(i)
	}
	return s
}

// goid returns the current goroutine's id, as runtime.Stack prints it.
func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _ := strconv.Atoi(strings.Fields(string(buf))[1])
	return id
}

type point struct{ X, Y int32 }

// shapes takes composite arguments: a struct, a slice, an interface, a
// bool and a float (floats travel in X registers).
//
//go:noinline
func shapes(p point, xs []int, e error, ok bool, f float64) (int, bool) {
	if e != nil || !ok {
		return -1, false
	}
	return int(p.X+p.Y) + len(xs) + int(f), true
}

// handle is the benchmark's probed function: small (a few ns), with a
// frame and a stack-bound check because of its call, and two RETs.
//
//go:noinline
func handle(n int) int {
	if n%7 == 0 {
		return sink(n)
	}
	return n + 1
}

//go:noinline
func sink(n int) int { return n * 3 }

// threadCPU returns the CPU time (user and system) of the current thread.
func threadCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func main() {
	mode := os.Args[1]
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	switch mode {
	case "work": // work G N: G goroutines call work N times each
		g, _ := strconv.Atoi(os.Args[2])
		n, _ := strconv.Atoi(os.Args[3])
		var wg sync.WaitGroup
		var mu sync.Mutex
		sum := 0
		for i := 0; i < g; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := 0
				for j := 0; j < n; j++ {
					r, _ := work(j, "abc")
					local += r
				}
				mu.Lock()
				sum += local
				fmt.Printf("goroutine %d calls %d\n", goid(), n)
				mu.Unlock()
			}()
		}
		wg.Wait()
		fmt.Printf("calls %d sum %d\n", g*n, sum)
	case "churn": // churn G N: G goroutines one after another (each reuses the last one's g) call work 1 to N times
		g, _ := strconv.Atoi(os.Args[2])
		n, _ := strconv.Atoi(os.Args[3])
		total := 0
		for i := 0; i < g; i++ {
			calls := 1 + i%n
			done := make(chan struct{})
			go func() {
				for j := 0; j < calls; j++ {
					work(j, "abc")
				}
				fmt.Printf("goroutine %d calls %d\n", goid(), calls)
				close(done)
			}()
			<-done
			total += calls
		}
		fmt.Printf("calls %d\n", total)
	case "grow": // grow G D: G goroutines recurse D deep through stack growth
		g, _ := strconv.Atoi(os.Args[2])
		d, _ := strconv.Atoi(os.Args[3])
		var wg sync.WaitGroup
		results := make([]int, g)
		for i := 0; i < g; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				results[i] = grow(d)
			}(i)
		}
		wg.Wait()
		ok := true
		for _, r := range results {
			ok = ok && r == d*(d+1)/2
		}
		fmt.Printf("calls %d ok %v\n", g*(d+1), ok)
	case "shapes": // shapes N: call shapes N times with n-dependent arguments
		n, _ := strconv.Atoi(os.Args[2])
		xs := make([]int, 3, 10)
		s := 0
		for i := 0; i < n; i++ {
			r, _ := shapes(point{int32(i), -2}, xs[:i%4], nil, i%2 == 0, 0.5)
			s += r
		}
		fmt.Printf("sum %d\n", s)
	case "bench": // bench N: call handle N times, print the wall and CPU ns it took
		n, _ := strconv.Atoi(os.Args[2])
		// The loop's thread's CPU time includes the kernel's uprobe work
		// and, unlike wall time, not the time other processes run.
		runtime.LockOSThread()
		cpu0 := threadCPU()
		start := time.Now()
		s := 0
		for i := 0; i < n; i++ {
			s += handle(i)
		}
		wall := time.Since(start).Nanoseconds()
		fmt.Printf("ns %d cpu %d sum %d\n", wall, threadCPU()-cpu0, s)
	case "spin": // spin: call tiny in a loop until stdin closes, then report
		stop := make(chan struct{})
		go func() {
			bufio.NewReader(os.Stdin).ReadString('\n')
			close(stop)
		}()
		total := 0
		for {
			select {
			case <-stop:
				fmt.Printf("spun %d ok %v\n", total, loop(10) == 145)
				return
			default:
			}
			total += 1000
			if loop(1000) != 1000*999/2+1000+1000*999 {
				fmt.Println("wrong result")
				os.Exit(1)
			}
			time.Sleep(0)
		}
	}
}
