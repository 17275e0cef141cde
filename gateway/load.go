package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/config"
)

var configFlag = &cli.StringFlag{
	Name:  "config",
	Usage: "mitrity-gateway.yaml (default: $MITRITY_GATEWAY_CONFIG, ./mitrity-gateway.yaml, /etc/mitrity/mitrity-gateway.yaml, else the embedded default)",
}

// loadConfig finds, loads and validates the config; on failure the error
// lists every problem, one per line, with file:line:column.
func loadConfig(c *cli.Context) (*config.Config, error) {
	path, embedded := config.Locate(c.String("config"))
	if embedded {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		return config.LoadEmbedded(wd)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration, refusing to start:\n%w", err)
	}
	return cfg, nil
}
