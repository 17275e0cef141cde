package main

import (
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/servecmd"
)

var configFlag = servecmd.ConfigFlag

// loadConfig finds, loads and validates the config (servecmd.LoadConfig).
func loadConfig(c *cli.Context) (*config.Config, error) { return servecmd.LoadConfig(c) }

// flagFiles are the gateway's own files that flags name.
func flagFiles(c *cli.Context) []ownfiles.File { return servecmd.FlagFiles(c) }
