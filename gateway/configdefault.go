package main

import "github.com/mitrity/mitrity/govern/config"

func configDefault() []byte { return config.DefaultYAML() }
