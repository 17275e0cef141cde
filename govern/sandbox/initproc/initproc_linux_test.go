package initproc

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestWithProxy(t *testing.T) {
	t.Parallel()
	got := WithProxy([]string{"PATH=/bin", "HTTPS_PROXY=http://evil:1", "no_proxy=*", "A=b=c"}, 40123)
	url := "http://127.0.0.1:40123"
	assert.Check(t, is.DeepEqual(got, []string{
		"PATH=/bin", "A=b=c",
		"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "ALL_PROXY=" + url, "http_proxy=" + url, "https_proxy=" + url, "all_proxy=" + url,
		"NO_PROXY=", "no_proxy=", "NODE_USE_ENV_PROXY=1",
		"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=40123 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=40123 -Dhttp.nonProxyHosts=",
	}))
}
