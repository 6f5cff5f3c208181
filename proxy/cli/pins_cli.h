/* pins_cli.h: keel pins list | diff | approve | forget. Returns an exit status. */
#ifndef KEEL_PINS_CLI_H
#define KEEL_PINS_CLI_H

extern const char pins_help[];
int pins_main(int argc, char **argv);

#endif
