/* umount.h — `runfs umount`: unmount, then wait for the daemon to let go of the store. */
#ifndef RFS_CLI_UMOUNT_H
#define RFS_CLI_UMOUNT_H

/* runfs umount MOUNTPOINT: argv[0] is the command's name; returns the exit status (0 the
 * daemon has exited, 1 the unmount or the wait failed, 2 usage or not a runfs mount). */
int rfs_cmd_umount(int argc, char **argv);

#endif
