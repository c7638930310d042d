package main

// The two Go clients, each with its defaults as its documentation shows them: rueidis
// (auto-pipelining; one connection per cluster node, 2 to a standalone server on 2+
// cores; client-side caching off, as in the Rust clients it is compared with) and
// go-redis (a connection pool, default size); plus rueidis-cached, rueidis with its
// client-side cache sized and capped as redline-cached is (64 MiB, 60 s), its GETs
// served by DoCache.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

type backend interface {
	Get(ctx context.Context, key string) (int, error)
	Set(ctx context.Context, key string, value []byte) error
	Close()
}

func osStderr() *os.File { return os.Stderr }

func connect(ctx context.Context, name, rawURL string, cluster bool) (backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("bad --url %q: %w", rawURL, err)
	}
	addr := u.Host
	password, _ := u.User.Password()
	switch name {
	case "rueidis", "rueidis-cached":
		cached := name == "rueidis-cached"
		opt := rueidis.ClientOption{
			InitAddress:       []string{addr},
			Password:          password,
			DisableCache:      !cached,
			ForceSingleClient: !cluster,
		}
		if cached {
			// rueidis's default tracking (OPTIN). The size is per connection (a
			// standalone client opens 2^min(log2(GOMAXPROCS), 2) of them); the bench's
			// working set (10,000 keys of 64 bytes) fits in any one, so it never evicts.
			opt.CacheSizeEachConn = cachedBytes
		}
		c, err := rueidis.NewClient(opt)
		if err != nil {
			return nil, err
		}
		if cached {
			return &rueidisCachedBackend{rueidisBackend{c}}, nil
		}
		return &rueidisBackend{c}, nil
	case "go-redis":
		var c goredis.UniversalClient
		if cluster {
			c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{addr}, Password: password})
		} else {
			c = goredis.NewClient(&goredis.Options{Addr: addr, Password: password})
		}
		if err := c.Ping(ctx).Err(); err != nil {
			return nil, err
		}
		return &goRedisBackend{c}, nil
	default:
		return nil, fmt.Errorf("unknown client %q (rueidis, rueidis-cached, go-redis)", name)
	}
}

type rueidisBackend struct{ c rueidis.Client }

func (b *rueidisBackend) Get(ctx context.Context, key string) (int, error) {
	v, err := b.c.Do(ctx, b.c.B().Get().Key(key).Build()).AsBytes()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return len(v), err
}

func (b *rueidisBackend) Set(ctx context.Context, key string, value []byte) error {
	return b.c.Do(ctx, b.c.B().Set().Key(key).Value(rueidis.BinaryString(value)).Build()).Error()
}

func (b *rueidisBackend) Close() { b.c.Close() }

// The client-side cache bounds redline-cached uses (bench/clients/src/backends/redline.rs).
const (
	cachedBytes = 64 << 20
	cachedTTL   = 60 * time.Second
)

// rueidisCachedBackend reads through rueidis's client-side cache; SET is rueidis's plain
// SET (the server's invalidation drops the entry).
type rueidisCachedBackend struct{ rueidisBackend }

func (b *rueidisCachedBackend) Get(ctx context.Context, key string) (int, error) {
	v, err := b.c.DoCache(ctx, b.c.B().Get().Key(key).Cache(), cachedTTL).AsBytes()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return len(v), err
}

type goRedisBackend struct{ c goredis.UniversalClient }

func (b *goRedisBackend) Get(ctx context.Context, key string) (int, error) {
	v, err := b.c.Get(ctx, key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	return len(v), err
}

func (b *goRedisBackend) Set(ctx context.Context, key string, value []byte) error {
	return b.c.Set(ctx, key, value, 0).Err()
}

func (b *goRedisBackend) Close() { _ = b.c.Close() }
