module github.com/sluicedb/sluice

go 1.26.8

require (
	github.com/go-sql-driver/mysql v1.10.1
	go.yaml.in/yaml/v3 v3.0.6
)

require filippo.io/edwards25519 v1.2.0 // indirect
