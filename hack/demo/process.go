package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gitsync.dev/gitsync/internal/testenv"
)

// startBackground starts a program that outlives this one (its own session,
// output to DIR/NAME.log, pid in DIR/NAME.pid).
func startBackground(dir, name, bin string, args ...string) (int, error) {
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid, os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(pid)), 0o600)
}

// alive reports whether pid is still running (and not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || !strings.Contains(string(stat), ") Z ")
}

// stopBackground signals the program recorded in DIR/NAME.pid and waits up to
// 30 seconds for it to exit.
func stopBackground(dir, name string) error {
	data, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("%s.pid: %w", name, err)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 300 && alive(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return os.Remove(filepath.Join(dir, name+".pid"))
}

// logTail returns the last lines of DIR/NAME.log for error messages.
func logTail(dir, name string) string {
	return testenv.LogTail(filepath.Join(dir, name+".log"), 20)
}

func down(dir string) error {
	for _, name := range []string{"gitsync", "control-plane"} {
		if err := stopBackground(dir, name); err != nil {
			return err
		}
	}
	_ = os.Remove(filepath.Join(dir, "state.json"))
	fmt.Println("demo stopped")
	return nil
}
