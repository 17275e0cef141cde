//go:build !linux

package main

import (
	"errors"
	"os"
	"time"
)

// dieWithParent has no kernel support here: poll the parent pid instead and
// exit when it changes (the process was reparented).
func dieWithParent(parentPID int) error {
	ppid := os.Getppid()
	if parentPID > 0 && ppid != parentPID {
		return errors.New("parent already gone")
	}
	go func() {
		for range time.Tick(time.Second) {
			if os.Getppid() != ppid {
				os.Exit(1)
			}
		}
	}()
	return nil
}
