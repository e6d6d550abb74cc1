package tools

// WriteConfig is writeConfig, for the tests of package tools_test.
var WriteConfig = writeConfig
