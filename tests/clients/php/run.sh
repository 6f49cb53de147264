#!/bin/sh
# The PHP battery (mysqli and PDO_MySQL on mysqlnd); see README.md. Needs php-cli and php-mysql.
exec php -d memory_limit=1G -d display_errors=stderr -d error_reporting=-1 \
	-d default_socket_timeout=20 -d mysqli.allow_local_infile=0 -d mysqlnd.net_read_timeout=20 \
	"$(dirname "$0")/battery.php"
